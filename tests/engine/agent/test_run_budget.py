"""The per-run token budget never stops a healthy run: unset it does not cap a run on a local
engine, and set it counts what the engine evaluated anew (prompt minus cached, plus output),
so a prefix the engine reused from its cache is not spent again on every request."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import Event, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.engine.agent.small_window_runs import prose_file
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, RecordedRequest, Reply

BUDGET_STOP = "Token budget used up"


def _reading_run(tmp_path: Path, *, reads: int, window: int, **changes: Any) -> list[str]:
    """One user turn in which the model reads `reads` files, one per request, then answers.
    Returns the warnings the run gave."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(reads):
        (ws / f"part{i}.txt").write_text(prose_file(i, words=300), encoding="utf-8")
    events: list[Event] = []

    def respond(request: RecordedRequest) -> Reply:
        done = sum(1 for m in request.body["messages"] if m["role"] == "tool")
        if not request.body.get("tools"):
            return Reply(text="## Goal\nread the parts\n")
        if done >= reads:
            return Reply(text="All parts read.")
        return Reply(text="", tool_calls=[FakeToolCall("read_file", {"path": f"part{done}.txt"})])

    with FakeLlamaServer(n_ctx=window, slots=1, n_ctx_train=65536) as fake:
        fake.responder = respond
        agent = default_agent().with_changes(
            name="reader",
            provider="llamacpp",
            base_url=fake.url,
            model=fake.model,
            max_iterations=reads + 5,
            **changes,
        )

        async def go() -> None:
            session = ChatSession(
                agent, BrimPaths.resolve(tmp_path / "home"), events.append, workspace=ws
            )
            await session.start()
            await session.send("Read every part, one after another.")
            await session.close()

        asyncio.run(go())
    return [e.text for e in events if isinstance(e, NoticeEvent) and e.level == "warning"]


def test_a_thirteen_request_file_reading_run_on_a_16k_window_is_not_stopped_by_a_budget(
    tmp_path: Path,
):
    warnings = _reading_run(tmp_path, reads=16, window=16384)
    assert not any(w.startswith(BUDGET_STOP) for w in warnings)


def test_a_set_budget_counts_what_the_engine_evaluated_anew_not_the_reused_prefix(
    tmp_path: Path,
):
    # Each request repeats the last as its prefix, which llama-server serves from its cache:
    # twelve requests of 2-6K prompt tokens (about 45K in all) evaluate about 7K anew.
    warnings = _reading_run(tmp_path, reads=12, window=16384, budget_max_tokens=12000)
    assert not any(w.startswith(BUDGET_STOP) for w in warnings)


def test_a_set_budget_still_stops_a_run_that_spends_it(tmp_path: Path):
    warnings = _reading_run(tmp_path, reads=12, window=16384, budget_max_tokens=400)
    assert any(w.startswith(BUDGET_STOP) for w in warnings)
