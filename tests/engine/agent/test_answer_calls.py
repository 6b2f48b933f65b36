"""One answer's tool calls: at most 64 run, and every result pairs with its own call.

Before, an answer with 10,000 calls ran all 10,000 (a turn of hours, the window filled many
times over), and two calls with the same id went out with the same id, so neither the
engine nor Brim could tell which result answered which.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.agent.answer_calls import MAX_CALLS_PER_ANSWER
from engine.config import default_agent
from engine.events import NOTICE_CALLS_CAPPED, Event, NoticeEvent, ToolResultEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall


def _run(tmp_path: Path, fake: FakeLlamaServer, events: list[Event], ws: Path) -> None:
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
    )

    async def go() -> None:
        session = ChatSession(
            agent, BrimPaths.resolve(tmp_path / "home"), events.append, workspace=ws
        )
        await session.start()
        try:
            await session.send("Read everything.")
        finally:
            await session.close()

    asyncio.run(go())


def _workspace(tmp_path: Path, files: int) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(files):
        (ws / f"f{i}.txt").write_text(f"content of file {i}", encoding="utf-8")
    return ws


def test_an_answer_with_10000_tool_calls_runs_64_and_answers_the_rest_as_not_run(
    tmp_path: Path,
):
    ws = _workspace(tmp_path, 3)
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=32768) as fake:
        fake.script_reply(
            tool_calls=[FakeToolCall("read_file", {"path": f"f{i % 3}.txt"}) for i in range(10_000)]
        )
        fake.script_reply("Done reading.")
        _run(tmp_path, fake, events, ws)
        follow_up = fake.chat_requests[1].body["messages"]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == MAX_CALLS_PER_ANSWER + 1
    assert not any(r.is_error for r in results[:-1])
    assert results[-1].is_error and results[-1].preview.startswith("Not run:")
    (capped,) = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_CALLS_CAPPED]
    assert capped.details == {"calls": 10_000, "run": 64, "not_run": 9_936}
    # What the model reads next: its 65 calls, each with its own result, the last saying so.
    (asked,) = [m for m in follow_up if m.get("tool_calls")]
    ids = [c["id"] for c in asked["tool_calls"]]
    answers = [m for m in follow_up if m["role"] == "tool"]
    assert len(ids) == 65 and [m["tool_call_id"] for m in answers] == ids
    assert "this call and the 9,935 after it did not run" in answers[-1]["content"]


def test_two_calls_with_the_same_id_each_get_their_own_id_and_their_own_result(
    tmp_path: Path,
):
    ws = _workspace(tmp_path, 2)
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(
            tool_calls=[
                FakeToolCall("read_file", {"path": "f0.txt"}, id="call_1"),
                FakeToolCall("read_file", {"path": "f1.txt"}, id="call_1"),
            ]
        )
        fake.script_reply("Read both.")
        _run(tmp_path, fake, events, ws)
        follow_up = fake.chat_requests[1].body["messages"]
    (asked,) = [m for m in follow_up if m.get("tool_calls")]
    ids = [c["id"] for c in asked["tool_calls"]]
    assert ids[0] == "call_1" and ids[1] != "call_1"
    by_id = {m["tool_call_id"]: m["content"] for m in follow_up if m["role"] == "tool"}
    assert set(by_id) == set(ids)
    assert "content of file 0" in by_id[ids[0]] and "content of file 1" in by_id[ids[1]]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.id for r in results] == ids
