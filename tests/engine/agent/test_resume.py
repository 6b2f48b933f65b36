"""Resuming a conversation folds the journal back in once, as a bounded preamble."""

from __future__ import annotations

import asyncio
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
