"""Resuming a conversation folds the journal back in once, as a bounded preamble."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from engine.config import default_agent
from engine.context import Journal
from engine.context.work_state import PREAMBLE_HEAD
from engine.events import Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer


def test_resuming_the_same_conversation_again_does_not_stack_another_journal_preamble(
    tmp_path: Path,
):
    events: list[Event] = []
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def open_and_close(conversation: str | None, text: str | None) -> ChatSession:
            session = ChatSession(agent, home, events.append, conversation_id=conversation)
            await session.start()
            if text:
                await session.send(text)
            await session.close()
            return session

        first = asyncio.run(open_and_close(None, "Migrate the routes."))
        work = home.conversation_dir("chat", first.conversation_id)
        Journal(work / "journal.jsonl").append({"summary": "## Goal\nMigrate 5 routes."})
        for _ in range(3):
            resumed = asyncio.run(open_and_close(first.conversation_id, None))
    preambles = [m for m in resumed.history() if m.content.startswith(PREAMBLE_HEAD)]
    assert len(preambles) == 1
    assert "Migrate 5 routes." in preambles[0].content


def test_no_request_carries_two_user_turns_in_a_row(tmp_path: Path):
    """Strict templates (Gemma, Mistral) refuse them: the resumed journal preamble and the
    pressure nudge join the user's message instead of standing beside it."""
    events: list[Event] = []
    home = BrimPaths.resolve(tmp_path / "home")
    workspace = tmp_path / "ws"  # tools offered: the nudge is for a model that has them
    workspace.mkdir()
    with FakeLlamaServer(n_ctx=2048) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def run(conversation: str | None, texts: list[str]) -> ChatSession:
            session = ChatSession(
                agent, home, events.append, conversation_id=conversation, workspace=workspace
            )
            await session.start()
            for text in texts:
                await session.send(text)
            await session.close()
            return session

        first = asyncio.run(run(None, ["Migrate the routes."]))
        work = home.conversation_dir("chat", first.conversation_id)
        Journal(work / "journal.jsonl").append({"summary": "## Goal\nMigrate 5 routes."})
        # Resume, then fill the window past 70% so the pressure nudge goes out too.
        asyncio.run(run(first.conversation_id, [f"Step {i}: " + "words " * 120 for i in range(14)]))
        bodies = [r.body for r in fake.chat_requests]
    roles = [[m["role"] for m in body["messages"]] for body in bodies]
    for sequence in roles:
        assert all(a != "user" or b != "user" for a, b in itertools.pairwise(sequence)), sequence
    contents = [str(m.get("content")) for body in bodies for m in body["messages"]]
    assert any(PREAMBLE_HEAD in c and "Step 0:" in c for c in contents)  # joined, not lost
    assert any("Step" in c and "\n\n[CONTEXT " in c for c in contents)  # a nudge, joined


def test_the_journal_preamble_is_neither_a_user_row_nor_the_users_words(tmp_path: Path):
    from desktop.widgets.transcript import rows_for
    from engine.memory.sources import is_user_source

    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def open_and_close(conversation: str | None, text: str | None) -> ChatSession:
            session = ChatSession(agent, home, lambda _e: None, conversation_id=conversation)
            await session.start()
            if text:
                await session.send(text)
            await session.close()
            return session

        first = asyncio.run(open_and_close(None, "Migrate the routes."))
        work = home.conversation_dir("chat", first.conversation_id)
        Journal(work / "journal.jsonl").append({"summary": "I always prefer tabs."})
        resumed = asyncio.run(open_and_close(first.conversation_id, None))
    (preamble,) = [m for m in resumed.history() if m.content.startswith(PREAMBLE_HEAD)]
    shown = [row.text for row in rows_for(resumed.transcript()) if row.kind == "user"]
    assert shown == ["Migrate the routes."]
    assert not is_user_source(preamble)
