"""No request above the window within a turn, through the real session and loop, against
the HTTP doubles of Ollama and llama-server on an 8,192-token window: one answer that reads
300 files of 1 KB, and one write_file of 100 KB that the user denies. Each request is
measured by the double's own tokenizer, as the engine would count it; before the fit rung
the request after the tool step went out at about 94K and 29K tokens."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import NOTICE_CUT_TO_FIT, ErrorEvent, Event, NoticeEvent, TurnEndEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeServer,
    FakeToolCall,
    OllamaModel,
    RecordedRequest,
    Reply,
)

WINDOW = 8192
MODEL = "qwen3:8b"
CHECKPOINT = (
    "## Goal\nRead the files.\n## Constraints & Preferences\n- none\n## Covered So Far\n- files\n"
    "## Progress\n### Done\n- read them\n### In Progress\n- none\n### Blocked\n- none\n"
    "## Key Decisions\n- none\n## Next Steps\n- answer\n## Critical Context\n- none\n"
)
PROSE = (
    "the quarterly report lists every supplier we reviewed and the notes each reviewer "
    "left about delivery times and the prices agreed for the coming season"
)


def _kilobyte(seed: int) -> str:
    words = PROSE.split()
    out = " ".join(words[(seed + i) % len(words)] for i in range(400))
    return out[:1024]


def _engine(kind: str) -> FakeServer:
    if kind == "ollama":
        return FakeOllama([OllamaModel(MODEL, context_length=40960)])
    return FakeLlamaServer(n_ctx=WINDOW, slots=1, n_ctx_train=32768)


def _agent(kind: str, fake: FakeServer) -> Any:
    extra = {"num_ctx": WINDOW} if kind == "ollama" else {}
    return default_agent().with_changes(
        name="reader", provider=kind, base_url=fake.url, model=MODEL, **extra
    )


def _after_tools(request: RecordedRequest) -> bool:
    return any(m.get("role") == "tool" for m in request.body.get("messages") or [])


def _responder(first: list[FakeToolCall]):
    def respond(request: RecordedRequest) -> Reply:
        if is_compaction(request.body) or not request.body.get("tools"):
            return Reply(text=CHECKPOINT)
        if _after_tools(request):
            return Reply(text="Read them all; none mentions the deadline.")
        return Reply(text="", tool_calls=first)

    return respond


def _run(
    kind: str, tmp_path: Path, calls: list[FakeToolCall], ws: Path
) -> tuple[list[Event], list[RecordedRequest]]:
    events: list[Event] = []
    with _engine(kind) as fake:
        fake.responder = _responder(calls)

        async def go() -> None:
            chat = ChatSession(
                _agent(kind, fake),
                BrimPaths.resolve(tmp_path / "home"),
                events.append,
                workspace=ws,
            )
            await chat.start()
            try:
                await chat.send("Read every file and tell me which ones mention the deadline.")
            finally:
                await chat.close()

        asyncio.run(go())
        requests = list(fake.chat_requests)
    return events, requests


def _largest(requests: list[RecordedRequest]) -> int:
    return max(r.prompt_tokens or 0 for r in requests)


def _report(case: str, kind: str, requests: list[RecordedRequest]) -> None:
    """The figure for the README (`-s` shows it): requests above the window, target 0."""
    above = sum((r.prompt_tokens or 0) > WINDOW for r in requests)
    print(
        f"\n{case} on {kind}: {above} of {len(requests)} requests above the {WINDOW:,} "
        f"window; the largest {_largest(requests):,} tokens by the double's count"
    )


@pytest.mark.parametrize("kind", ["ollama", "llamacpp"])
def test_one_answer_with_300_reads_of_1_kb_never_sends_a_request_above_the_window(
    kind: str, tmp_path: Path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(300):
        (ws / f"file{i:03}.txt").write_text(_kilobyte(i), encoding="utf-8")
    calls = [FakeToolCall("read_file", {"path": f"file{i:03}.txt"}) for i in range(300)]

    events, requests = _run(kind, tmp_path, calls, ws)
    _report("300 reads of 1 KB in one answer", kind, requests)

    assert len(requests) >= 2
    assert _largest(requests) <= WINDOW, [r.prompt_tokens for r in requests]
    assert [r for r in requests if r.truncated or r.rejected] == []
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 1
    # The turn went on, and the model was told what it does not see.
    after = [r for r in requests if _after_tools(r)]
    sent = json.dumps(after[-1].body["messages"])
    assert "ran but their results do not fit" in sent
    told = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_CUT_TO_FIT]
    assert told and told[0].details["calls_left_out"] > 0


@pytest.mark.parametrize("kind", ["ollama", "llamacpp"])
def test_a_denied_write_of_100_kb_never_sends_a_request_above_the_window(kind: str, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    content = (PROSE + "\n") * (100_000 // (len(PROSE) + 1))
    calls = [FakeToolCall("write_file", {"path": "notes.txt", "content": content})]

    events, requests = _run(kind, tmp_path, calls, ws)
    _report("a denied 100 KB write_file", kind, requests)

    assert not (ws / "notes.txt").exists()  # denied: nothing written
    assert len(requests) >= 2
    assert _largest(requests) <= WINDOW, [r.prompt_tokens for r in requests]
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    after = [r for r in requests if _after_tools(r)]
    sent = json.dumps(after[-1].body["messages"])
    assert "cut to fit the context window" in sent
