"""`/memory` and `/memory review` in a session without a review dialog (headless): a pointer
to `brim memory review`, never a message to the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import Event, MemorySuggestionsEvent, NoticeEvent
from engine.memory import MemoryService
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.engine.memory.helpers import queue_facts, sentences
from tests.helpers.fake_engines import FakeLlamaServer


def test_memory_review_in_a_headless_chat_says_how_to_review_and_sends_nothing(tmp_path: Path):
    paths = BrimPaths.under(tmp_path)
    queue_facts(MemoryService.for_paths(paths), sentences(2))
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )

        async def go() -> None:
            session = ChatSession(agent, paths, events.append, memory=True)
            await session.start()
            events.clear()
            await session.send("/memory review")
            await session.send("/memory")
            await session.close()

        asyncio.run(go())
        assert fake.chat_requests == []
    notices = [e.text for e in events if isinstance(e, NoticeEvent)]
    assert notices == ["Review memory with `brim memory review`."] * 2
    assert MemorySuggestionsEvent(pending=2) in events
