"""A message that cannot fit the window even alone is refused before anything is compacted
or sent, with its size and the window (issue 11 item 5)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import CompactionEvent, ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.fake_engines import FakeLlamaServer, Reply


def test_a_paste_bigger_than_the_window_is_refused_before_any_compaction_or_request(
    tmp_path: Path,
):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=1024) as fake:
        fake.responder = lambda request: Reply(text="ok")
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )

        async def go() -> str:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
            await session.start()
            for i in range(6):
                await session.send(f"Turn {i}: " + "history " * 60)
            await session.send("paste " * 12_000)  # ~64 KB into a 1K window
            await session.close()
            return session.conversation_id

        conversation = asyncio.run(go())
        sent = [r for r in fake.chat_requests if "paste paste" in str(r.body)]
    refused = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.kind for e in refused] == ["message_too_large"]
    data = refused[0].data
    assert data["window"] == 1024 and data["tokens"] > 12_000 and data["message_tokens"] > 12_000
    assert "1,024-token window" in refused[0].message
    assert sent == []
    # Nothing was compacted for it: the compactions seen all came before the paste.
    index = events.index(refused[0])
    assert not any(isinstance(e, CompactionEvent) for e in events[index:])
    store = Store.open(BrimPaths.resolve(tmp_path).db_path)
    try:
        kept = store.messages(conversation, include_archived=True)
    finally:
        store.close()
    assert not any(m.content.startswith("paste paste") for m in kept)
