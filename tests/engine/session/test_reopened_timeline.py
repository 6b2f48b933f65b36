"""A conversation opened again shows its whole timeline and keeps its receipts (real store,
real sessions, a fake llama-server)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import NOTICE_COMPACTED, ContextReportEvent, Event, NoticeEvent, TurnEndEvent
from engine.messages import ToolCall, assistant, notice, tool_result, user
from engine.paths import BrimPaths
from engine.report.context_report import MARKER_CLEAR, MARKER_COMPACTION, ContextReport, saved_marks
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _respond(request: Any) -> Reply:
    return Reply(text=SUMMARY if is_compaction(request.body) else "ok")


def _agent(fake: FakeLlamaServer) -> Any:
    return default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
    )


def _shape(report: ContextReport) -> tuple[list[tuple[int, int, int]], list[tuple[int, str]]]:
    points = [(p.request, p.used, p.window) for p in report.timeline]
    return points, [(m.after, m.kind) for m in report.markers]


def _last_report(events: list[Event]) -> ContextReport:
    reports = [e.report for e in events if isinstance(e, ContextReportEvent) and not e.snapshot]
    return reports[-1]


def _chat_until_compacted(session: ChatSession, events: list[Event]) -> None:
    """Turns until a compaction has happened, then one more (its marker sits mid-chart)."""

    async def go() -> None:
        await session.start()
        try:
            for i in range(20):
                await session.send(f"Message {i}: " + "words " * 100)
                if MARKER_COMPACTION in {m.kind for m in _last_report(events).markers}:
                    break
            await session.send("One more after the compaction.")
        finally:
            await session.close()

    asyncio.run(go())


def test_a_reopened_conversation_shows_every_request_and_the_compaction_marker(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        events: list[Event] = []
        first = ChatSession(_agent(fake), home, events.append)
        _chat_until_compacted(first, events)
        before = _last_report(events)

        reopened: list[Event] = []
        again = ChatSession(
            _agent(fake), home, reopened.append, conversation_id=first.conversation_id
        )

        async def reopen_then_send() -> ContextReport:
            await again.start()
            try:
                opened = _last_report(reopened)
                await again.send("And a question after reopening.")
                return opened
            finally:
                await again.close()

        opened = asyncio.run(reopen_then_send())
    points, markers = _shape(before)
    assert len(points) >= 3 and MARKER_COMPACTION in [kind for _, kind in markers]
    assert _shape(opened) == (points, markers)
    assert opened.requests == before.requests
    # No request has landed in this process yet: the headline is Brim's count of the next
    # request (exact here: llama-server counts it), and the cache lines wait for one rather
    # than passing earlier processes' figures off as this one's.
    assert opened.describes == "next request" and not opened.estimated
    assert opened.cache_lines() == []
    after = _last_report(reopened)
    assert [p.request for p in after.timeline] == [p[0] for p in points] + [before.requests + 1]
    assert after.cache_lines()[0].startswith("Prompt cache (this process): ")


def test_the_session_hands_back_each_turns_receipt_as_the_live_event_showed_it(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        events: list[Event] = []
        session = ChatSession(_agent(fake), home, events.append)

        async def go() -> list[Any]:
            await session.start()
            try:
                for text in ("one", "two", "three"):
                    await session.send(text)
            finally:
                await session.close()
            reopened = ChatSession(
                _agent(fake), home, lambda _e: None, conversation_id=session.conversation_id
            )
            await reopened.start()
            try:
                return reopened.turn_receipts()
            finally:
                await reopened.close()

        receipts = asyncio.run(go())
    live = [e for e in events if isinstance(e, TurnEndEvent)]
    assert len(receipts) == len(live) == 3
    assert [
        (r.elapsed_s, r.prompt_tokens, r.completion_tokens, r.tokens_per_s) for r in receipts
    ] == [(e.elapsed_s, e.prompt_tokens, e.completion_tokens, e.tokens_per_s) for e in live]


def test_the_saved_compaction_row_keeps_its_kind_and_figures_in_meta(tmp_path: Path):
    """The reopened timeline reads the ladder's act from the row's meta, not its wording."""
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        events: list[Event] = []
        first = ChatSession(_agent(fake), home, events.append)
        _chat_until_compacted(first, events)
    live = [(m.kind, m.detail) for m in _last_report(events).markers]
    # On the stream: the ladder's own line goes out transient, the saved row after it, both
    # with the kind and figures a program reads (never parsed out of the wording).
    told = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_COMPACTED]
    assert [(e.transient, e.marker) for e in told[:2]] == [(True, ""), (False, MARKER_COMPACTION)]
    assert told[0].details == told[1].details and told[0].details["messages_before"] > 0
    with Store.open(home.db_path) as store:
        records = store.records(first.conversation_id)
    rows = [
        r.message
        for r in records
        if r.message.is_notice and r.message.meta_value("marker") == MARKER_COMPACTION
    ]
    assert rows
    row = rows[0]
    assert row.meta_value("notice_kind") == NOTICE_COMPACTED
    before, after = row.meta_value("messages_before"), row.meta_value("messages_after")
    assert isinstance(before, int) and isinstance(after, int) and before > after
    assert f"{before} -> {after} messages" in row.content
    saved = [(m.kind, m.detail) for m in saved_marks(records) if m.kind == MARKER_COMPACTION]
    assert saved == [k for k in live if k[0] == MARKER_COMPACTION]


def test_a_clearing_is_found_in_the_saved_record_by_the_rewrite_that_cleared_it(tmp_path: Path):
    with Store.open(tmp_path / "brim.sqlite3") as store:
        cid = store.create_conversation("chat")
        call = ToolCall("call-1", "read_file", '{"path": "a.txt"}')
        result = tool_result(call, "x" * 5000)
        for message in (user("read it"), assistant("", (call,)), result):
            store.append_message(cid, message)
        store.append_message(cid, notice("auto-compacted 9 -> 3 messages (ctx 2K/2K)"))
        live = store.messages(cid)
        cleared = result.with_meta(cleared=True)
        store.replace_messages(cid, [m if m.id != result.id else cleared for m in live])
        records = store.records(cid)
    archived_at = next(r.archived_at for r in records if r.message.id == result.id and r.archived)
    marks = saved_marks(records)
    # The notice has no marker meta: only rows the ladder marked count as its acts.
    assert [(m.kind, m.at, m.detail) for m in marks] == [
        (MARKER_CLEAR, archived_at, "1 tool results")
    ]


def test_a_reopened_compacted_conversation_counts_its_history_as_the_live_one_did(
    tmp_path: Path,
):
    """The gauge read 6.9K live and 7.2K on every reopen: the reopened counter had not had
    the engine count the history yet, and fell back to its estimate while calling it exact."""
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        events: list[Event] = []
        first = ChatSession(_agent(fake), home, events.append)
        _chat_until_compacted(first, events)
        live = _last_report(events)
        reopened: list[Event] = []
        again = ChatSession(
            _agent(fake), home, reopened.append, conversation_id=first.conversation_id
        )

        async def reopen() -> ContextReport:
            await again.start()
            try:
                return _last_report(reopened)
            finally:
                await again.close()

        opened = asyncio.run(reopen())
    assert MARKER_COMPACTION in {m.kind for m in live.markers}
    counted = {c.name: c.tokens for c in live.categories}
    assert {c.name: c.tokens for c in opened.categories} == counted
    assert not opened.estimated
