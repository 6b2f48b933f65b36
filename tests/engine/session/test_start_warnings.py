"""An engine's warning about its window is said at every start (the window event) and kept in
the conversation once: opening the conversation again does not save it again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import AgentConfig
from engine.events import Event, WindowEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine

WARNING = "num_ctx is not pinned: Brim assumes 128K until Ollama loads the model"


def _open(paths: BrimPaths, conversation: str | None) -> tuple[str, list[str], list[list[str]]]:
    """Open the conversation (None: a new one, with a turn), and say what it keeps."""
    events: list[Event] = []
    agent = AgentConfig(name="t", provider="llamacpp", model="fake-model")
    engine = InProcessEngine(window=8192, warnings=[WARNING])
    session = ChatSession(
        agent, paths, events.append, provider=engine, conversation_id=conversation
    )

    async def run() -> None:
        await session.start()
        if conversation is None:
            await session.send("Hello")
        await session.close()

    asyncio.run(run())
    kept = [m.content for m in session.transcript() if m.is_notice]
    told = [e.warnings for e in events if isinstance(e, WindowEvent)]
    return session.conversation_id, kept, told


def test_a_window_warning_is_kept_once_however_often_the_conversation_opens(tmp_path: Path):
    paths = BrimPaths.resolve(tmp_path / "home")
    conversation, first, told_first = _open(paths, None)
    _, second, told_second = _open(paths, conversation)
    _, third, told_third = _open(paths, conversation)
    assert first == second == third == [WARNING]
    assert told_first == told_second == told_third == [[WARNING]]
