"""Ollama cutting a prompt silently is met like an overflow, and told as what it was. (From
0.12.6 Brim has it refuse instead, so the cut is met on an older server.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import Event, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_ollama import OUT_OF_MEMORY, FakeOllama, OllamaModel

MODEL = "llama3.1:8b"


def test_a_silent_cut_is_told_as_a_truncation_not_as_a_rejection_with_a_retry(tmp_path: Path):
    events: list[Event] = []
    with FakeOllama(
        [OllamaModel(MODEL, context_length=131072)],
        default_num_ctx=1024,
        version="0.5.7",
        refuse_loads=OUT_OF_MEMORY,  # not loaded at the start: Brim assumes 4,096
    ) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="ollama", base_url=fake.url, model=MODEL
        )

        async def go() -> None:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path / "home"), events.append)
            await session.start()
            try:
                await session.send("Please read this. " + "words " * 1500)
            finally:
                await session.close()

        asyncio.run(go())
        # The summary the cut called for is a request too; the user's turn is sent once.
        answered = [
            r
            for r in fake.chat_requests
            if str(r.body["messages"][-1].get("content", "")).startswith("Please read this.")
        ]
    told = [e.text for e in events if isinstance(e, NoticeEvent)]
    assert any(t.startswith("The engine truncated the prompt") for t in told), told
    assert not any("rejected" in t or "retrying" in t for t in told), told
    assert len(answered) == 1  # nothing was retried: the answer had already come back
