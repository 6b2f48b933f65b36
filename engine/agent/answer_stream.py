"""One answer as it streams: its text (and a thinking model's reasoning, apart) told as it
comes, the gauge kept moving, a loop or an answer past its cap stopped, and what the user
already saw kept when it breaks off.

The stream is closed on the way out, so an answer stopped here is dropped by the engine
too (the connection closes, the embedded child is told to stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from engine.agent.answer_calls import take_calls
from engine.agent.reasoning import Thinking
from engine.agent.shared_pool import keep_partial
from engine.agent.types import FINISH_LENGTH, FINISH_REPETITION, Answer, Conversation
from engine.events import AnswerProgressEvent, DeltaEvent, EventSink, StateEvent
from engine.messages import Message, ToolCall
from engine.providers.base import (
    ChatOptions,
    Provider,
    ReasoningDelta,
    StreamDone,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.errors import ProviderError
from engine.repetition import Repetition, RepetitionGuard
from engine.tokens import TokenCounter
from engine.tokens.growing import GrowingCount
from engine.window.output_cap import client_limit

# How often a streaming answer's growth is reported to the gauge (seconds): often enough
# to see it move, rarely enough that headless output is not flooded with reports.
PROGRESS_EVERY_S = 0.25


async def stream_answer(
    provider: Provider,
    model: str,
    request: list[Message],
    options: ChatOptions,
    *,
    counter: TokenCounter,
    conversation: Conversation,
    sink: EventSink,
    counted: int = 0,
    window: int = 0,
) -> Answer:
    """The answer to `request` (counted at `counted` tokens, in a `window`), as it ended:
    on its own, stopped by the repetition guard, or past `options.max_tokens` where the
    engine ignored it."""
    parts: list[str] = []
    calls: tuple[ToolCall, ...] = ()
    usage = Usage()
    finish: str | None = None
    first_token: float | None = None
    guard = RepetitionGuard()
    reported = 0.0
    loop: Repetition | None = None
    cap = options.max_tokens
    # The engines count max_tokens over thinking and answer together; so does Brim's cap.
    limit = None if cap is None else client_limit(cap)
    written = GrowingCount(counter.count_text)
    thinking = Thinking(counter, sink)

    def over() -> bool:  # past the cap: max_tokens ignored
        return limit is not None and written.settled + thinking.settled > limit

    def progress() -> None:
        nonlocal reported
        now = time.monotonic()
        if now - reported >= PROGRESS_EVERY_S:
            reported = now
            thought = thinking.tokens
            # The gauge's view: the prompt plus the answer (and its reasoning) so far.
            sink(
                AnswerProgressEvent(
                    prompt_tokens=counted,
                    completion_tokens=written.tokens + thought,
                    window=window,
                    reasoning_tokens=thought,
                )
            )

    stream = provider.stream_chat(model, request, options)
    try:
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, ReasoningDelta):
                    if not item.text:
                        continue
                    if first_token is None:
                        first_token = time.monotonic()
                    loop = thinking.feed(item.text)
                    progress()
                    if loop is not None or over():
                        break
                elif isinstance(item, TextDelta):
                    if first_token is None:
                        first_token = time.monotonic()
                    if not parts or thinking.open:  # the answer proper begins
                        thinking.close()
                        sink(StateEvent("streaming"))
                    parts.append(item.text)
                    sink(DeltaEvent(item.text))
                    written.add(item.text)
                    progress()
                    loop = guard.feed(item.text)
                    if loop is not None or over():
                        break
                elif isinstance(item, ToolCallsReady):
                    thinking.close()
                    calls = item.calls
                elif isinstance(item, StreamDone):
                    usage, finish = item.usage, item.finish_reason
                    thinking.settle(usage)
    except (asyncio.CancelledError, ProviderError) as exc:
        thinking.close()
        keep_partial(conversation, "".join(parts), exc, reasoning=thinking.kept())
        raise
    thinking.close()
    text = "".join(parts)
    reasoning = thinking.kept()
    if loop is not None:
        # The engine never reported usage for an answer stopped midway: what it wrote
        # is estimated, so the receipt and the budget count the loop it cost. The
        # repeats are not kept: sent back, they would invite more of the same. A loop in
        # the reasoning keeps one copy of its passage; the answer so far stays.
        usage = Usage(completion_tokens=written.tokens + thinking.tokens)
        kept = text if thinking.loop is loop else text[: loop.keep_chars]
        return Answer(
            kept,
            (),
            usage,
            FINISH_REPETITION,
            first_token,
            loop,
            reasoning=reasoning,
            looped_in_reasoning=thinking.loop is loop,
        )
    if over():  # no usage came; kept, and marked cut as at the engine's own cap
        usage = Usage(completion_tokens=written.tokens + thinking.tokens)
        return Answer(
            text,
            (),
            usage,
            FINISH_LENGTH,
            first_token,
            overran=True,
            reasoning=reasoning,
            reasoning_tokens=thinking.tokens,
            reasoning_s=thinking.seconds,
        )
    taken = take_calls(calls)
    return Answer(
        text,
        taken.calls,
        usage,
        finish,
        first_token,
        calls_not_run=taken.not_run,
        reasoning=reasoning,
        reasoning_tokens=thinking.exact if thinking.exact is not None else thinking.tokens,
        reasoning_s=thinking.seconds,
        reasoning_exact=thinking.exact is not None,
    )
