"""What the session tells the rail, `/context`, `/usage` and `/work` (fake llama-server)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import (
    ContextEvent,
    ContextReportEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    StateEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageReportEvent,
    WindowEvent,
    WorkStateEvent,
)
from engine.paths import BrimPaths
from engine.report.context_report import MARKER_COMPACTION, TOOL_RESULTS_PREFIX
from engine.session import ChatSession
from engine.tools import ApprovalRequest, Decision
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, FakeVllm, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _summary(body: dict[str, Any]) -> str:
    """SUMMARY, its Goal the first words the user wrote in what it summarizes: a
    line the conversation supports, as a checkpoint's must be to enter it."""
    messages = body["messages"]
    fenced = re.search(r"^\[user\]\n(.+)$", str(messages[-1].get("content", "")), re.MULTILINE)
    said = fenced.group(1) if fenced else next(
        (str(m.get("content", "")) for m in messages[1:-1] if m.get("role") == "user"), ""
    )  # fmt: skip
    return SUMMARY.replace("Chat.", " ".join(said.split()[:3]) or "Chat.")


def _summaries_or(text: str) -> Callable[[Any], Reply]:
    def respond(request: Any) -> Reply:
        return Reply(text=_summary(request.body) if is_compaction(request.body) else text)

    return respond


def _session(
    fake: Any, tmp_path: Path, events: list[Event], provider: str = "llamacpp", **kw: Any
) -> ChatSession:
    agent = default_agent().with_changes(
        name="chat", provider=provider, base_url=fake.url, model=fake.model
    )
    return ChatSession(agent, BrimPaths.resolve(tmp_path / "home"), events.append, **kw)


def _drive(session: ChatSession, script: Callable[[ChatSession], Awaitable[None]]) -> None:
    async def go() -> None:
        await session.start()
        try:
            await script(session)
        finally:
            await session.close()

    asyncio.run(go())


def _reports(events: list[Event]) -> list[ContextReportEvent]:
    return [e for e in events if isinstance(e, ContextReportEvent)]


def test_every_landed_request_is_followed_by_a_report_with_the_engines_own_count(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:

        async def script(s: ChatSession) -> None:
            await s.send("Hello there")
            await s.send("And again")

        _drive(_session(fake, tmp_path, events), script)
    contexts = [e for e in events if isinstance(e, ContextEvent)]
    assert len(contexts) == 2
    for context in contexts:
        after = events[events.index(context) + 1]
        assert isinstance(after, ContextReportEvent)
        assert (after.report.used, after.report.window) == (context.used, context.window)
        assert not after.report.estimated
    last = _reports(events)[-1].report
    assert [p.used for p in last.timeline] == [c.used for c in contexts]
    # llama-server reports cached prompt tokens: the second request reused the first's prefix.
    assert last.cache_lines()[0].startswith("Prompt cache (session): ")
    assert last.cache_session is not None and last.cache_session.cached > 0


def test_an_engine_that_reports_no_cache_figure_reads_not_reported(tmp_path):
    events: list[Event] = []
    with FakeVllm(max_model_len=4096) as fake:  # no --enable-prompt-tokens-details

        async def script(s: ChatSession) -> None:
            await s.send("Hello")
            await s.send("Hello again")

        _drive(_session(fake, tmp_path, events, provider="vllm"), script)
    report = _reports(events)[-1].report
    assert report.cache_lines() == ["Prompt cache: not reported"]


def test_slash_context_is_a_snapshot_listing_tool_results_by_tool_largest_first(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("alpha beta " * 400, encoding="utf-8")
    (ws / "AGENTS.md").write_text("Always answer briefly.", encoding="utf-8")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(
            tool_calls=[
                FakeToolCall("read_file", {"path": "big.txt"}),
                FakeToolCall("list_directory", {"path": "."}),
            ]
        )
        fake.script_reply("Read it.")

        async def script(s: ChatSession) -> None:
            await s.send("Read big.txt")
            await s.send("/context")

        _drive(_session(fake, tmp_path, events, workspace=ws), script)
    snapshot = [e for e in _reports(events) if e.snapshot]
    assert len(snapshot) == 1
    report = snapshot[0].report
    tools = [c for c in report.categories if c.tool]
    assert [c.tool for c in tools] == ["read_file", "list_directory"]
    assert tools[0].name == TOOL_RESULTS_PREFIX + "read_file"
    assert tools[0].tokens > tools[1].tokens > 0
    by_name = {c.name: c.tokens for c in report.categories}
    assert by_name["Tool schemas"] > 0 and by_name["Project context"] > 0
    assert report.instructions == ("AGENTS.md",)
    assert "/context" not in json.dumps([r.body for r in fake.chat_requests])


def test_an_auto_compaction_is_saved_as_the_seeds_two_lines_and_marks_the_timeline(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")

        rows: list[Any] = []

        async def script(s: ChatSession) -> None:
            for i in range(20):
                await s.send(f"Message {i}: " + "words " * 100)
            rows.extend(s.transcript())

        _drive(_session(fake, tmp_path, events), script)
    notices = [e.text for e in events if isinstance(e, NoticeEvent) and not e.transient]
    passing = [e.text for e in events if isinstance(e, NoticeEvent) and e.transient]
    # The ladder's lines go out as it acts (headless shows them), never saved.
    assert re.fullmatch(
        r"Context window ~\d+% full \(~[\d,]+ of [\d,]+ tokens\): auto-compacting…", passing[0]
    ), passing
    assert re.fullmatch(r"Compacted \d+ → \d+ messages \(saved ~\d+ tokens\)", passing[1]), passing
    assert not any(text.endswith("auto-compacting…") for text in notices)
    compacted = [t for t in notices if t.startswith("auto-compacted ")]
    assert compacted, notices
    first, why = compacted[0].split("\n")
    assert first.startswith("auto-compacted ") and first.endswith("/2K)")
    assert why.endswith("into a summary: the prompt neared the context window")
    saved = [m for m in rows if m.is_notice and m.meta_value("marker") == MARKER_COMPACTION]
    assert [m.content for m in saved] == compacted
    assert not any(m.content in passing for m in rows)
    report = _reports(events)[-1].report
    assert MARKER_COMPACTION in {m.kind for m in report.markers}


def test_crossing_70_percent_warns_once_in_the_saved_conversation(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")

        rows: list[Any] = []

        async def script(s: ChatSession) -> None:
            # Steps smaller than the way from 70% to the trigger (which leaves a compaction
            # its room: 1,433 and 1,461 tokens on this window, 28 apart), so one request
            # lands between them: ~25 tokens a turn with the framing and the answer.
            for i in range(64):
                await s.send(f"Message {i}: " + "words " * 8)
            rows.extend(s.transcript())

        _drive(_session(fake, tmp_path, events), script)
    warnings = [e.text for e in events if isinstance(e, NoticeEvent) and "70% mark" in e.text]
    assert len(warnings) == 1
    assert any(m.is_notice and m.content == warnings[0] for m in rows)


def test_usage_counts_every_request_including_summaries(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")

        async def script(s: ChatSession) -> None:
            for i in range(10):
                await s.send(f"Message {i}: " + "words " * 100)
            await s.send("/usage")

        _drive(_session(fake, tmp_path, events), script)
        sent = len(fake.chat_requests)
    (usage,) = [e for e in events if isinstance(e, UsageReportEvent)]
    assert usage.report.total.requests == sent
    assert usage.report.rows[0].provider == "llamacpp"
    assert usage.report.rows[0].price == "(no published price)"


def test_slash_work_shows_the_work_state_and_work_clear_forgets_it(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:

        async def script(s: ChatSession) -> None:
            folder = s.paths.conversation_dir(s.agent.name, s.conversation_id)
            folder.mkdir(parents=True)
            (folder / "state.json").write_text('{"goal": "ship it"}', encoding="utf-8")
            await s.send("/work")
            await s.send("/work clear")
            await s.send("/work")

        _drive(_session(fake, tmp_path, events), script)
    answers = [e for e in events if isinstance(e, WorkStateEvent)]
    assert [(a.text, a.cleared) for a in answers] == [
        ("goal: ship it", False),
        ("", True),
        ("", False),
    ]
    assert fake.chat_requests == []


def test_slash_new_starts_a_new_conversation_on_the_loaded_engine(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:

        async def script(s: ChatSession) -> None:
            await s.send("first conversation")
            before = s.conversation_id
            await s.send("/new")
            assert s.conversation_id != before
            assert [m.role for m in s.history()] == ["system"]

        _drive(_session(fake, tmp_path, events), script)
    windows = [e for e in events if isinstance(e, WindowEvent)]
    assert len({w.conversation for w in windows}) == 2
    assert _reports(events)[-1].report.timeline == ()


def test_retry_re_runs_the_failed_turn_without_repeating_the_user_message(tmp_path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.script_reply(fail="http500")
        fake.script_reply("Recovered.")

        async def script(s: ChatSession) -> None:
            await s.send("Please answer")
            assert any(isinstance(e, ErrorEvent) for e in events)
            await s.retry()

        session = _session(fake, tmp_path, events)
        _drive(session, script)
        history = session.history()
    assert [m.content for m in history if m.role == "user"] == ["Please answer"]
    assert history[-1].role == "assistant" and history[-1].content == "Recovered."


def test_the_session_says_it_waits_for_approval_while_the_approver_decides(tmp_path):
    events: list[Event] = []
    ws = tmp_path / "ws"
    ws.mkdir()

    class Approver:
        async def approve(self, request: ApprovalRequest) -> Decision:
            events.append(StateEvent(f"asked: {request.tool}"))
            return Decision.ALLOW_ONCE

    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(
            tool_calls=[FakeToolCall("write_file", {"path": "a.txt", "content": "hi"})]
        )
        fake.script_reply("Done.")

        async def script(s: ChatSession) -> None:
            await s.send("write a.txt")

        _drive(_session(fake, tmp_path, events, workspace=ws, approver=Approver()), script)
    states = [e.state for e in events if isinstance(e, StateEvent)]
    asked = states.index("asked: write_file")
    assert states[asked - 1] == "waiting for approval"
    assert states[asked + 1] == "streaming"
    assert any(isinstance(e, ToolResultEvent) for e in events)
    assert (ws / "a.txt").read_text() == "hi"


def test_a_compaction_the_agent_asks_for_is_told_as_the_agents_not_the_users(tmp_path):
    events: list[Event] = []
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192) as fake:

        def respond(request: Any) -> Reply:
            messages = request.body["messages"]
            last = str(messages[-1].get("content", ""))
            if is_compaction(request.body):
                return Reply(text=_summary(request.body))
            if last.startswith("Tidy up") and messages[-1].get("role") == "user":
                return Reply(text="", tool_calls=[FakeToolCall("summarize_context", {})])
            return Reply(text="ok")

        fake.responder = respond
        rows: list[Any] = []

        async def script(s: ChatSession) -> None:
            for i in range(16):
                await s.send(f"Step {i}: " + "details " * 150)
            await s.send("Tidy up your context now.")
            rows.extend(s.transcript())

        _drive(_session(fake, tmp_path, events, workspace=ws), script)
    saved = [m.content for m in rows if m.is_notice and m.meta_value("marker") == MARKER_COMPACTION]
    assert saved, [m.content for m in rows if m.is_notice]
    assert saved[-1].startswith("compacted ")
    assert saved[-1].endswith(": the agent asked for it (summarize_context)")


def test_a_turn_that_fails_after_a_tool_step_still_gets_its_receipt_before_the_error(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the notes", encoding="utf-8")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})])
        fake.script_reply(fail="http500")
        receipts: list[Any] = []

        async def script(s: ChatSession) -> None:
            await s.send("Read notes.txt")
            receipts.extend(s.turn_receipts())

        _drive(_session(fake, tmp_path, events, workspace=ws), script)
    ends = [i for i, e in enumerate(events) if isinstance(e, TurnEndEvent)]
    errors = [i for i, e in enumerate(events) if isinstance(e, ErrorEvent)]
    assert len(ends) == 1 and len(errors) == 1 and ends[0] < errors[0]
    spent = events[ends[0]]
    assert spent.prompt_tokens > 0 and spent.completion_tokens > 0  # the tool step's request
    assert [r.prompt_tokens for r in receipts] == [spent.prompt_tokens]
