"""A session that streams a scripted answer as fast as the engine thread can emit it.

The UI benchmark drives the real bridge and window with it; it implements the engine's
`SessionControl` protocol (what the desktop drives) and nothing more, so the bench needs
nothing from the tests. Every token is its own `DeltaEvent`, far faster than a local model.

It stands in for `ChatSession` rather than running it over a scripted engine because the
bench measures the window, not the session: the session's own work per token (counting the
answer, the repetition guard) would slow the stream it is meant to flood the window with.
What it says of a message is what ChatSession says, in ChatSession's order, less the
figures it has none for (the rail's reports): the submission taken (`AcceptedEvent`), the
request sent, the answer streaming, its usage and fill, the turn's receipt, ready again; a
second message while one streams is refused in ChatSession's words, and a cancel ends the
turn as ChatSession's does (a notice, no receipt). tests/desktop/test_session_protocol.py
holds it to that order.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from engine.api import (
    AgentConfig,
    ContextEvent,
    DeltaEvent,
    EventSink,
    Message,
    NoticeEvent,
    Receipt,
    StateEvent,
    StepEvent,
    TurnEndEvent,
    WindowEvent,
    WindowResolution,
)
from engine.commands import route
from engine.config import default_agent
from engine.events import UsageEvent
from engine.messages import assistant, user
from engine.session.admission import busy_refusal

SOURCE = "server"  # the window as an engine that serves it says


class StreamingSession:
    """Answers every message with `tokens`, one delta each; cancel stops the stream."""

    def __init__(self, sink: EventSink, tokens: list[str], *, window: int = 131_072) -> None:
        self._sink = sink
        self._tokens = list(tokens)
        self._window = window
        self._history: list[Message] = []
        self._cancelled = False
        self._running = False
        self.agent: AgentConfig = default_agent().with_changes(name="bench", model="streaming")
        self.workspace: Path | None = None
        self.conversation_id = uuid.uuid4().hex

    @property
    def window(self) -> WindowResolution | None:
        return None  # the header names the agent's model

    async def start(self) -> None:
        self._sink(WindowEvent(self._window, SOURCE, conversation=self.conversation_id))
        self._sink(StateEvent("ready"))

    async def send(self, text: str) -> None:
        """Every text is answered as a message (the bench types no commands)."""
        if self._running:
            self._sink(busy_refusal(waiting=False))
            return
        self._sink(route(text).accepted)
        self._running = True
        try:
            await self._answer(text)
        finally:
            self._running = False
            self._sink(StateEvent("ready"))

    async def _answer(self, text: str) -> None:
        self._history.append(user(text))
        self._cancelled = False
        began = time.perf_counter()
        self._sink(StepEvent(1, None))
        self._sink(StateEvent("waiting for the engine"))
        produced: list[str] = []
        for token in self._tokens:
            if self._cancelled:
                break
            if not produced:
                self._sink(StateEvent("streaming"))
            produced.append(token)
            self._sink(DeltaEvent(token))
            await asyncio.sleep(0)  # let a cancel in
        self._history.append(assistant("".join(produced)))
        if self._cancelled:
            self._sink(NoticeEvent("info", "Turn cancelled."))
            return
        elapsed = max(time.perf_counter() - began, 1e-3)
        prompt, completion = len(text) // 4, len(produced)
        self._sink(UsageEvent(prompt, completion, None))
        percent = round(100.0 * prompt / self._window, 1)
        self._sink(ContextEvent(prompt, self._window, percent, SOURCE))
        self._sink(TurnEndEvent(elapsed, prompt, completion, completion / elapsed))

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
