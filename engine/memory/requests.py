"""Memory's model requests: one completion over a provider, and the meter that bounds them.

Memory runs beside the user's work (before a compaction the user waits on, after a
conversation on a machine the user is still using), so what it may spend is fixed up front:
a compaction's extraction sends at most one request, the close-time reflection one in all
(engine/memory/reflect.py). The meter refuses any request past its limit (`BudgetSpent`,
which the passes read as "stop here") and keeps the figures memory.log reports: requests,
prompt tokens as Brim counted them before sending (each fits the window with its answer,
engine/memory/sizing.py), the engine's own usage where it reports one, and the seconds spent.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.messages import Message, ToolCall
from engine.providers.base import (
    ChatOptions,
    Provider,
    StreamDone,
    TextDelta,
    ToolCallsReady,
    Usage,
)


@dataclass(frozen=True)
class Completion:
    text: str
    calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None  # what the engine reported, where it did


class Complete(Protocol):
    """One memory request: the messages, the tools offered, the answer's `max_tokens`."""

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion: ...


def provider_complete(
    provider: Provider, model: str, on_done: Callable[[str, StreamDone], None] | None = None
) -> Complete:
    """A `Complete` over a provider: one streamed chat request, tools offered, its output cap
    set per request. The engine's own settings (Ollama's num_ctx, strictness) are the
    provider's, as on every request. `on_done(model, done)` hears each request's end (its
    usage, for `/usage`)."""

    async def complete(
        messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        # Brim's own request: no thinking (its reasoning, where an engine sends some
        # anyway, is not read: only the answer's text and calls are).
        options = ChatOptions(max_tokens=max_tokens, temperature=0.1, tools=tools, reasoning="off")
        parts: list[str] = []
        calls: tuple[ToolCall, ...] = ()
        done: StreamDone | None = None
        async for item in provider.stream_chat(model, messages, options):
            if isinstance(item, TextDelta):
                parts.append(item.text)
            elif isinstance(item, ToolCallsReady):
                calls = item.calls
            elif isinstance(item, StreamDone):
                done = item
                if on_done is not None:
                    on_done(model, item)
        return Completion(
            "".join(parts),
            calls,
            done.finish_reason if done else None,
            done.usage if done else None,
        )

    return complete


class BudgetSpent(Exception):
    """Memory's request budget is spent: the pass stops here (not an error)."""


Count = Callable[[list[Message], list[dict[str, Any]]], Awaitable[int]]


@dataclass
class Meter:
    """Requests within a limit (`limit`: None for no limit), and what they cost."""

    limit: int | None = None
    requests: int = 0
    prompt_tokens: int = 0  # as Brim counted each request before sending it
    max_tokens: int = 0  # the answers' caps, summed
    engine_prompt_tokens: int = 0  # as the engine reported (0 where it reported none)
    completion_tokens: int = 0
    seconds: float = 0.0  # waiting on the engine
    windows: list[int] = field(default_factory=list)  # prompt + max_tokens of each request

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.requests)

    def wrap(self, complete: Complete, count: Count) -> Complete:
        """`complete`, counted and refused past the limit."""

        async def metered(
            messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
        ) -> Completion:
            if self.limit is not None and self.requests >= self.limit:
                raise BudgetSpent(f"memory's budget of {self.limit} requests is spent")
            prompt = await count(messages, tools)
            self.requests += 1
            self.prompt_tokens += prompt
            self.max_tokens += max_tokens
            self.windows.append(prompt + max_tokens)
            started = time.monotonic()
            try:
                answer = await complete(messages, tools, max_tokens)
            finally:
                self.seconds += time.monotonic() - started
            if answer.usage is not None:
                self.engine_prompt_tokens += answer.usage.prompt_tokens or 0
                self.completion_tokens += answer.usage.completion_tokens or 0
            return answer

        return metered

    def describe(self) -> str:
        """One line for memory.log."""
        engine = ""
        if self.engine_prompt_tokens or self.completion_tokens:
            engine = (
                f"; the engine read {self.engine_prompt_tokens:,} prompt tokens and wrote "
                f"{self.completion_tokens:,}"
            )
        return (
            f"{self.requests} model request{'s' if self.requests != 1 else ''}, "
            f"{self.prompt_tokens:,} prompt tokens counted, answers capped at "
            f"{self.max_tokens:,}{engine}, {self.seconds:.1f} s"
        )
