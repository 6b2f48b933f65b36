"""The agent loop: prepare the request, stream the answer, record what it cost.

One call of `run_turn` is one user turn. The loop owns no history of its own: the session
hands it the conversation and receives every new message through `on_message`, which
persists it before anything else happens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.config import AgentConfig
from engine.events import (
    ContextEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    StateEvent,
    TurnEndEvent,
    UsageEvent,
)
from engine.messages import Message, ToolCall, assistant, model_messages, notice
from engine.providers.base import (
    ChatOptions,
    Provider,
    StreamDone,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.errors import ProviderError
from engine.store import Store
from engine.tokens import TokenCounter, detect_silent_truncation
from engine.window import WindowResolution

log = logging.getLogger(__name__)


@dataclass
class TurnOutcome:
    text: str
    prompt_tokens: int
    completion_tokens: int
    elapsed_s: float
    finish_reason: str | None
    error: ProviderError | None = None


@dataclass
class _Answer:
    text: str
    calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: str | None
    eval_started: float | None


class AgentLoop:
    def __init__(
        self,
        *,
        agent: AgentConfig,
        provider: Provider,
        window: WindowResolution,
        counter: TokenCounter,
        sink: Callable[[Event], None],
        on_message: Callable[[Message], None],
        store: Store | None = None,
        conversation_id: str = "",
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.agent = agent
        self.provider = provider
        self.window = window
        self.counter = counter
        self.sink = sink
        self.on_message = on_message
        self.store = store
        self.conversation_id = conversation_id
        self.tools = tools or []

    def _options(self) -> ChatOptions:
        return ChatOptions(
            max_tokens=self.agent.max_tokens,
            temperature=self.agent.temperature,
            # Ollama takes its window from the request; the same value every time, or it reloads.
            num_ctx=self.agent.num_ctx if self.provider.kind == "ollama" else None,
            tools=self.tools,
        )

    async def run_turn(self, history: list[Message]) -> TurnOutcome:
        started = time.monotonic()
        request = model_messages(history)
        counted = self.counter.count_request(request, self.tools)
        self.sink(StateEvent("streaming"))
        try:
            answer = await self._stream(request)
        except ProviderError as exc:
            self.sink(ErrorEvent(exc.kind, exc.message))
            return TurnOutcome("", 0, 0, time.monotonic() - started, None, error=exc)

        self.on_message(assistant(answer.text, answer.calls))
        usage = answer.usage
        self._land(request, counted, usage)
        elapsed = time.monotonic() - started
        prompt = usage.prompt_tokens or 0
        completion = usage.completion_tokens or 0
        tps = _tokens_per_second(completion, usage.eval_s, answer.eval_started)
        self._record_receipt(elapsed, prompt, completion, tps)
        self.sink(
            TurnEndEvent(
                elapsed_s=round(elapsed, 3),
                prompt_tokens=prompt,
                completion_tokens=completion,
                tokens_per_s=round(tps, 2),
            )
        )
        return TurnOutcome(answer.text, prompt, completion, elapsed, answer.finish_reason)

    async def _stream(self, request: list[Message]) -> _Answer:
        parts: list[str] = []
        calls: tuple[ToolCall, ...] = ()
        usage = Usage()
        finish: str | None = None
        first_token: float | None = None
        try:
            async for item in self.provider.stream_chat(self.agent.model, request, self._options()):
                if isinstance(item, TextDelta):
                    if first_token is None:
                        first_token = time.monotonic()
                    parts.append(item.text)
                    self.sink(DeltaEvent(item.text))
                elif isinstance(item, ToolCallsReady):
                    calls = item.calls
                elif isinstance(item, StreamDone):
                    usage, finish = item.usage, item.finish_reason
        except (asyncio.CancelledError, ProviderError):
            # Keep what the user already saw: a partial answer is saved, marked as such.
            if parts:
                partial = assistant("".join(parts)).with_meta(partial=True)
                self.on_message(partial)
            raise
        return _Answer("".join(parts), calls, usage, finish, first_token)

    def _land(self, request: list[Message], counted: int, usage: Usage) -> None:
        """A request landed: report usage and fill, calibrate, and look for silent cuts."""
        self.sink(
            UsageEvent(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
            )
        )
        used = usage.prompt_tokens if usage.prompt_tokens is not None else counted
        window = self.window.window
        self.sink(
            ContextEvent(
                used=used,
                window=window,
                percent=round(100.0 * used / window, 1) if window else 0.0,
                source=self.window.source,
                estimated=usage.prompt_tokens is None,
            )
        )
        self._record_usage(usage)
        if usage.prompt_tokens is None:
            return
        # Only Ollama cuts a prompt silently; other engines reject it with an error.
        if self.provider.kind == "ollama" and detect_silent_truncation(
            counted, usage.prompt_tokens, window=window
        ):
            text = (
                f"The engine truncated the prompt: Brim sent ~{counted:,} tokens but the engine "
                f"read only {usage.prompt_tokens:,}. Its window is smaller than "
                f"{window:,}; pin num_ctx in the agent so Brim accounts against the real one."
            )
            self.on_message(notice(text, "warning"))
            self.sink(NoticeEvent("warning", text))
            return
        self.counter.calibrate(request, self.tools, usage.prompt_tokens)

    def _record_usage(self, usage: Usage) -> None:
        if self.store is None:
            return
        try:
            self.store.record_usage(
                self.conversation_id,
                agent=self.agent.name,
                provider=self.provider.kind,
                model=self.agent.model or "default",
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
            )
        except Exception:
            log.exception("could not record usage")

    def _record_receipt(self, elapsed: float, prompt: int, completion: int, tps: float) -> None:
        if self.store is None:
            return
        try:
            self.store.record_receipt(
                self.conversation_id,
                elapsed_s=elapsed,
                prompt_tokens=prompt,
                completion_tokens=completion,
                tokens_per_s=tps,
            )
        except Exception:
            log.exception("could not record the turn receipt")


def _tokens_per_second(completion: int, eval_s: float | None, first_token: float | None) -> float:
    if completion <= 0:
        return 0.0
    if eval_s and eval_s > 0:
        return completion / eval_s
    if first_token is not None:
        spent = time.monotonic() - first_token
        if spent > 0:
            return completion / spent
    return 0.0
