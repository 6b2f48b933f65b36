"""The loop and the ladder against the in-process engine (tests/helpers/fake_provider.py):
the whole session, with no HTTP in the way, on content whose token cost per character
changes from turn to turn. The wire of each engine is tested by the loopback fakes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine.config import AgentConfig
from engine.context.checkpoint import has_checkpoint_headings
from engine.context.model_face import OPENING
from engine.events import CompactionEvent, ErrorEvent, Event, ToolResultEvent, UsageEvent
from engine.messages import ToolCall
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

CHECKPOINT = (
    "## Goal\nTrack the figures the user reports, turn by turn.\n"
    "## Constraints & Preferences\n- none\n## Covered So Far\n- (none)\n"
    "## Progress\n### Done\n- noted the figures so far\n### In Progress\n- (none)\n"
    "### Blocked\n- (none)\n## Key Decisions\n- none\n## Next Steps\n- keep noting\n"
    "## Critical Context\n- none\n"
)


def _body(request: Request) -> dict:
    return {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}


def _answer(request: Request) -> Answer:
    return Answer(CHECKPOINT if is_compaction(_body(request)) else "Noted the figures.")


def _turn(i: int) -> str:
    if i % 2:  # numbers: about two characters a token
        rows = ", ".join(f"{i * 97 + k}:{(i + 3) * (k + 11) % 1000}" for k in range(60))
        return f"Turn {i}: the readings were {rows}."
    words = "the team reviewed the quarterly plan and agreed on the next milestones "
    return f"Turn {i}: {words * 18}"


def _session(engine: InProcessEngine, tmp_path: Path, events: list[Event], **agent) -> ChatSession:
    config = AgentConfig(name="t", provider="llamacpp", model="fake-model", **agent)
    paths = BrimPaths.resolve(tmp_path / "home")
    return ChatSession(config, paths, events.append, provider=engine, workspace=tmp_path)


async def _run(session: ChatSession, turns: list[str]) -> None:
    await session.start()
    try:
        for text in turns:
            await session.send(text)
    finally:
        await session.close()


def test_a_run_whose_content_shifts_between_prose_and_numbers_never_passes_82_percent(tmp_path):
    engine = InProcessEngine(window=2048)
    engine.responder = _answer
    events: list[Event] = []
    asyncio.run(_run(_session(engine, tmp_path, events), [_turn(i) for i in range(14)]))

    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [e for e in events if isinstance(e, CompactionEvent)], "a 2K window must compact"
    agent_requests = [r for r in engine.answered if not is_compaction(_body(r))]
    assert max(r.prompt_tokens for r in agent_requests) <= 0.82 * 2048
    # Brim counted each request through the engine's own tokenizer before sending it: off
    # only where Qwen's template joins what no single message holds (the tools in the system
    # message, consecutive tool results in one block), a residual learned from each answer.
    usage = [e for e in events if isinstance(e, UsageEvent) and e.counted is not None]
    assert usage and all(e.counted_exact for e in usage)
    assert all(abs((e.counted or 0) - (e.prompt_tokens or 0)) <= 8 for e in usage), [
        (e.counted, e.prompt_tokens) for e in usage
    ]


def test_after_a_compaction_the_model_sees_its_checkpoint_as_condensed_history(tmp_path):
    engine = InProcessEngine(window=2048)
    engine.responder = _answer
    events: list[Event] = []
    asyncio.run(_run(_session(engine, tmp_path, events), [_turn(i) for i in range(14)]))

    first_compaction = next(i for i, r in enumerate(engine.requests) if is_compaction(_body(r)))
    after = [r for r in engine.requests[first_compaction:] if not is_compaction(_body(r))]
    assert after
    for request in after:
        # Plain context inside the one system message, after the prompt: no document of
        # headings for the model to continue.
        assert not [m for m in request.messages if has_checkpoint_headings(m.content)]
        assert OPENING in request.messages[0].content
        assert not any(OPENING in m.content for m in request.messages[1:])
        assert "Track the figures" in request.messages[0].content


def test_a_tool_call_runs_in_the_workspace_and_its_result_reaches_the_next_request(tmp_path):
    (tmp_path / "notes.md").write_text("The release is on Thursday.\n")
    engine = InProcessEngine(window=8192)
    call = ToolCall("call-1", "read_file", json.dumps({"path": "notes.md"}))
    engine.script("", tool_calls=[call])
    engine.script("The release is on Thursday.")
    events: list[Event] = []
    asyncio.run(_run(_session(engine, tmp_path, events), ["When is the release?"]))

    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results and "Thursday" in json.dumps(results[0].to_dict())
    second = engine.requests[1].messages
    assert second[-1].role == "tool" and "Thursday" in second[-1].content
    assert engine.requests[1].cached_tokens > 0  # the first request's prefix was reused


@pytest.mark.parametrize("window", [2048, 4096])
def test_every_request_fits_the_window_it_was_sent_to(tmp_path, window):
    engine = InProcessEngine(window=window)
    engine.responder = _answer
    events: list[Event] = []
    asyncio.run(_run(_session(engine, tmp_path, events), [_turn(i)[:600] for i in range(10)]))

    assert not [r for r in engine.requests if r.rejected]
    assert not [e for e in events if isinstance(e, ErrorEvent)]
