"""A scripted stand-in for `engine.session.ChatSession`, for driving the desktop without a model.

It keeps the real session's contract: every method runs on the engine's asyncio loop (it
records which thread it ran on, so a test can prove the bridge never calls it from Qt), events
go through the sink it was given, `send` never raises, and `cancel` is safe at any time.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace

from engine.events import (
    ContextEvent,
    DeltaEvent,
    ErrorEvent,
    EventSink,
    NoticeEvent,
    StateEvent,
    TurnEndEvent,
    UsageEvent,
    WindowEvent,
)
from engine.messages import Message, assistant, notice, user


@dataclass
class FakeTurn:
    """What one `send` streams back.

    `hold`: after the deltas, wait until cancelled (a turn that runs until Esc).
    `error`: end the turn with this error instead of usage.
    """

    deltas: list[str] = field(default_factory=lambda: ["Hello", " from", " the", " fake."])
    delay_s: float = 0.0
    hold: bool = False
    error: ErrorEvent | None = None
    notices: list[NoticeEvent] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    elapsed_s: float | None = None  # what TurnEndEvent reports (default: the real time taken)


class FakeSession:
    def __init__(
        self,
        sink: EventSink,
        *,
        turns: list[FakeTurn] | None = None,
        history: list[Message] | None = None,
        window: int = 8192,
        source: str = "model-max",
        window_warnings: list[str] | None = None,
        agent_name: str = "default",
        model: str = "SmolLM2-135M-Instruct",
        start_delay_s: float = 0.0,
        start_error: Exception | None = None,
        base_prompt_tokens: int = 180,
    ) -> None:
        self._sink = sink
        self._turns = list(turns or [])
        self._history = list(history or [])
        self._window = window
        self._source = source
        self._window_warnings = list(window_warnings or [])
        self._start_delay_s = start_delay_s
        self._start_error = start_error
        self._used = base_prompt_tokens
        self._cancel: asyncio.Event | None = None
        self._lock = threading.Lock()
        self.agent = SimpleNamespace(name=agent_name, model=model)
        self.conversation_id = uuid.uuid4().hex
        self.sent: list[str] = []
        self.cancels = 0
        self.closed = False
        self.call_threads: set[int] = set()

    def _enter(self) -> None:
        with self._lock:
            self.call_threads.add(threading.get_ident())

    async def start(self) -> None:
        self._enter()
        self._sink(StateEvent("loading model"))
        if self._start_delay_s:
            await asyncio.sleep(self._start_delay_s)
        if self._start_error is not None:
            raise self._start_error
        self._sink(
            WindowEvent(
                window=self._window,
                source=self._source,
                warnings=list(self._window_warnings),
                conversation=self.conversation_id,
            )
        )
        for warning in self._window_warnings:  # like the real session: saved, then emitted
            self._history.append(notice(warning, "warning"))
            self._sink(NoticeEvent("warning", warning))
        self._sink(StateEvent("ready"))

    async def send(self, text: str) -> None:
        self._enter()
        with self._lock:
            self.sent.append(text)
        turn = self._turns.pop(0) if self._turns else FakeTurn()
        self._cancel = asyncio.Event()
        began = time.monotonic()
        self._history.append(user(text))
        self._sink(StateEvent("streaming"))
        for event in turn.notices:
            self._sink(event)
        produced: list[str] = []
        try:
            for delta in turn.deltas:
                if self._cancel.is_set():
                    break
                produced.append(delta)
                self._sink(DeltaEvent(delta))
                await asyncio.sleep(turn.delay_s)
            if turn.hold:
                await self._cancel.wait()
            if turn.error is not None:
                self._sink(turn.error)
                return
            prompt = turn.prompt_tokens or self._used + len(text) // 4 + 8
            completion = turn.completion_tokens or len(produced)
            self._used = prompt + completion
            self._sink(UsageEvent(prompt, completion, turn.cached_tokens))
            self._sink(
                ContextEvent(
                    used=self._used,
                    window=self._window,
                    percent=100.0 * self._used / self._window,
                    source=self._source,
                )
            )
            elapsed = turn.elapsed_s or max(time.monotonic() - began, 1e-3)
            self._sink(TurnEndEvent(elapsed, prompt, completion, completion / elapsed))
        finally:
            if produced:
                self._history.append(assistant("".join(produced)))
            self._cancel = None
            self._sink(StateEvent("ready"))

    def cancel(self) -> None:
        self._enter()
        with self._lock:
            self.cancels += 1
        if self._cancel is not None:
            self._cancel.set()

    async def close(self) -> None:
        self._enter()
        self.closed = True

    def history(self) -> list[Message]:
        self._enter()
        return list(self._history)
