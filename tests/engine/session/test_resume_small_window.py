"""Resuming on a small window keeps the recent messages: the journal preamble is sized from
the window and the history it joins (engine/context/budget.py), the record of the checkpoint
the history still carries is not sent twice, and `/work clear` forgets the journal too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, default_agent
from engine.context import ContextBudget, Journal
from engine.context.model_face import summary_message
from engine.context.work_state import PREAMBLE_HEAD
from engine.events import CompactionEvent, ErrorEvent, Event, TrimEvent, WorkStateEvent
from engine.messages import Message, assistant, user
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.fake_engines import FakeLlamaServer

WINDOW = 4096


def _record(n: int) -> dict[str, Any]:
    """A journal record as long as a checkpoint on a large window (~700 tokens)."""
    done = "; ".join(f"migrated route /api/v{n}/item{i} and checked its tests" for i in range(40))
    return {"kind": "compaction", "summary": f"## Goal\n- Migrate the routes.\n## Done\n- {done}"}


def _agent(fake: FakeLlamaServer) -> AgentConfig:
    return default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
    )


def _session(agent: AgentConfig, home: BrimPaths, events: list[Event], **kw: Any) -> Any:
    async def go(conversation: str | None, texts: list[str]) -> ChatSession:
        session = ChatSession(agent, home, events.append, conversation_id=conversation, **kw)
        await session.start()
        for text in texts:
            await session.send(text)
        await session.close()
        return session

    return go


def _saved_history(home: BrimPaths, conversation: str, extra: list[Message]) -> list[Message]:
    store = Store.open(home.ensure().db_path)
    history = [*store.messages(conversation), *extra]
    store.replace_messages(conversation, history)
    store.close()
    return history


def test_a_4096_window_resume_keeps_every_recent_message(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=WINDOW, slots=1) as fake:
        run = _session(_agent(fake), home, events)
        first = asyncio.run(run(None, ["Migrate the routes."]))
        # The history as a compaction on this window leaves it (about half the window),
        # and a journal of three long records, as a long run on a larger window wrote it.
        recent = []
        for i in range(20):
            recent += [user(f"Route {i}: " + "check the handler " * 30), assistant(f"Done {i}.")]
        history = _saved_history(home, first.conversation_id, recent)
        journal = Journal(home.conversation_dir("chat", first.conversation_id) / "journal.jsonl")
        for n in range(3):
            journal.append(_record(n))
        events.clear()
        resumed = asyncio.run(run(first.conversation_id, ["Go on with the next route."]))
        sent = fake.chat_requests[-1]
    print(f"\nresumed request: {sent.prompt_tokens} tokens of {WINDOW}")
    assert not [e for e in events if isinstance(e, (ErrorEvent, CompactionEvent, TrimEvent))]
    wire = "\n".join(str(m.get("content")) for m in sent.body["messages"])
    missing = [m.content for m in history if m.role != "system" and m.content not in wire]
    assert missing == []  # every recent message went out
    assert PREAMBLE_HEAD in wire and "/api/v2/" in wire  # the newest record, cut to fit
    assert sent.prompt_tokens is not None and sent.prompt_tokens < 0.8 * WINDOW  # no compaction
    preambles = [m for m in resumed.history() if m.content.startswith(PREAMBLE_HEAD)]
    assert len(preambles) == 1


def test_the_record_of_the_checkpoint_the_history_still_carries_is_not_sent_twice(
    tmp_path: Path,
):
    home = BrimPaths.resolve(tmp_path / "home")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        run = _session(_agent(fake), home, events)
        first = asyncio.run(run(None, ["Migrate the routes."]))
        live = summary_message("## Goal\n- Migrate the routes.\n## Done\n- moved /api/users\n")
        _saved_history(home, first.conversation_id, [live])
        journal = Journal(home.conversation_dir("chat", first.conversation_id) / "journal.jsonl")
        # Records an older Brim wrote name no checkpoint: weighed entry by entry.
        journal.append({"summary": "## Done\n- moved /api/billing\n- moved /api/users"})
        resumed = asyncio.run(run(first.conversation_id, []))
    (preamble,) = [m for m in resumed.history() if m.content.startswith(PREAMBLE_HEAD)]
    assert "/api/billing" in preamble.content and "/api/users" not in preamble.content


def test_the_live_checkpoints_own_record_and_those_it_merged_add_nothing_on_reopen(
    tmp_path: Path,
):
    """The live checkpoint was merged from every record before its own: what it left out of
    them for room the request did not have before either, so nothing is folded in."""
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        run = _session(_agent(fake), home, [])
        first = asyncio.run(run(None, ["Migrate the routes."]))
        live = summary_message("## Goal\n- Migrate the routes.\n## Done\n- moved /api/users\n")
        _saved_history(home, first.conversation_id, [live])
        journal = Journal(home.conversation_dir("chat", first.conversation_id) / "journal.jsonl")
        journal.append({"summary": "## Done\n- moved /api/billing", "checkpoint": "older"})
        journal.append({"summary": "## Done\n- moved /api/users", "checkpoint": live.id})
        resumed = asyncio.run(run(first.conversation_id, []))
    assert not [m for m in resumed.history() if m.content.startswith(PREAMBLE_HEAD)]


def test_work_clear_forgets_the_journal_and_a_resume_folds_nothing_in(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = _agent(fake)

        async def clear_it() -> str:
            session = ChatSession(agent, home, events.append)
            await session.start()
            await session.send("Migrate the routes.")
            folder = home.conversation_dir("chat", session.conversation_id)
            Journal(folder / "journal.jsonl").append({"summary": "## Goal\n- Migrate 5 routes."})
            await session.send("/work clear")
            await session.close()
            return session.conversation_id

        conversation = asyncio.run(clear_it())
        again = asyncio.run(_session(agent, home, events)(conversation, []))
    assert any(isinstance(e, WorkStateEvent) and e.cleared for e in events)
    assert not [m for m in again.history() if m.content.startswith(PREAMBLE_HEAD)]


def test_the_preamble_budget_comes_from_the_window_and_what_the_history_leaves():
    small, large = ContextBudget(WINDOW, fixed_tokens=600), ContextBudget(131_072)
    assert large.journal_tokens(used=10_000) == 2_000  # the seed's ~2k on a large window
    assert 0 < small.journal_tokens(used=1_200) < 2_000 // 2
    assert small.journal_tokens(used=small.warn_threshold) == 0
