"""A session that streams a scripted answer as fast as the engine thread can emit it.

The UI benchmark drives the real bridge and window with it; it implements the engine's
`SessionControl` protocol (what the desktop drives) and nothing more, so the bench needs
nothing from the tests. Every token is its own `DeltaEvent`, far faster than a local model.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from engine.api import (
    AgentConfig,
    DeltaEvent,
    EventSink,
    Message,
    Receipt,
    StateEvent,
    TurnEndEvent,
    WindowEvent,
    WindowResolution,
)
from engine.config import default_agent
from engine.messages import assistant, user


class StreamingSession:
    """Answers every message with `tokens`, one delta each; cancel stops the stream."""

    def __init__(self, sink: EventSink, tokens: list[str], *, window: int = 131_072) -> None:
        self._sink = sink
        self._tokens = list(tokens)
        self._window = window
        self._history: list[Message] = []
        self._cancelled = False
        self.agent: AgentConfig = default_agent().with_changes(name="bench", model="streaming")
        self.workspace: Path | None = None
        self.conversation_id = uuid.uuid4().hex

    @property
    def window(self) -> WindowResolution | None:
        return None  # the header names the agent's model

    async def start(self) -> None:
        self._sink(WindowEvent(self._window, "model-max", conversation=self.conversation_id))
        self._sink(StateEvent("ready"))

    async def send(self, text: str) -> None:
        self._history.append(user(text))
        self._cancelled = False
        began = time.perf_counter()
        self._sink(StateEvent("streaming"))
        produced: list[str] = []
        for token in self._tokens:
            if self._cancelled:
                break
            produced.append(token)
            self._sink(DeltaEvent(token))
            await asyncio.sleep(0)  # let a cancel in
        elapsed = max(time.perf_counter() - began, 1e-3)
        self._history.append(assistant("".join(produced)))
        self._sink(TurnEndEvent(elapsed, len(text) // 4, len(produced), len(produced) / elapsed))
        self._sink(StateEvent("ready"))

    def cancel(self) -> None:
        self._cancelled = True

    async def retry(self) -> None:
        self._sink(StateEvent("ready"))

    async def open_conversation(self, conversation_id: str | None) -> None:
        self.conversation_id = conversation_id or uuid.uuid4().hex
        self._history = []
        self._sink(StateEvent("ready"))

    async def close(self) -> None:
        self.cancel()

    def history(self) -> list[Message]:
        return list(self._history)

    def transcript(self) -> list[Message]:
        return self.history()

    def lower_pin(self, num_ctx: int) -> bool:
        return False  # no engine behind it: no pin to lower

    def turn_receipts(self) -> list[Receipt]:
        return []
