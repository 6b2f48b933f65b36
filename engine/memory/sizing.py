"""How large a memory request may be: its prompt and its answer fit the window together.

Memory's requests (the extractor before a compaction, the reflection when a conversation is
left, `/learn`'s scans and its curation call) go to the engine the conversation uses, often
a small window. Each is counted as the session counts a request, by the engine's own count
where it has one (`counting_with` primes the counter, as the agent loop does), and sent with
`max_tokens` no larger than what the window leaves: prompt + max_tokens ≤ window, less a
small margin for a count that is estimated. The transcript a request carries is sized from
the same room, so a span is read in as few requests as fit, not one per turn.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.messages import Message
from engine.tokens import TokenCounter

# The most a memory answer is given: a JSON list of a few suggestions (about 50 tokens each).
# A small model that rambles writes to the cap, which on a CPU is most of its time (768 took
# over 80 s on the bundled model, so a reflection never finished).
OUTPUT_TOKENS = 320
MIN_OUTPUT_TOKENS = 96  # less than this cuts a JSON answer short: the request is not sent
MIN_TRANSCRIPT_TOKENS = 96  # a scan with less room than this for the transcript is skipped
TOOLS_SHARE = 0.4  # the tools are offered only when the whole frame takes at most this share

CountText = Callable[[str], int]
# The prompt tokens of a request (messages, tool schemas), as the engine counts them.
CountRequest = Callable[[list[Message], list[dict[str, Any]]], "int | Awaitable[int]"]
# The same count where the engine is asked: always awaited.
EngineCount = Callable[[list[Message], list[dict[str, Any]]], Awaitable[int]]


def margin(window: int) -> int:
    """Tokens kept free beside the count: an estimated count may be a little low."""
    return max(16, window // 32)


def approximate(count_text: CountText) -> CountRequest:
    """A request count from a text count: each message's text and framing, the schemas."""

    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        total = sum(count_text(m.content) + 4 for m in messages) + 8
        return total + (count_text(json.dumps(tools, ensure_ascii=False)) if tools else 0)

    return count


def counting_with(counter: TokenCounter) -> EngineCount:
    """The session counter's count of a whole request; an engine that counts for Brim is
    asked first (the messages and schemas it has not counted yet)."""

    async def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        if counter.counts_through_engine:
            await counter.prime(messages, tools)
        return counter.count_request(messages, tools)

    return count


@dataclass(frozen=True)
class Room:
    """One window and how its requests are counted."""

    window: int
    count_request: CountRequest

    async def count(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        value = self.count_request(messages, tools)
        if inspect.isawaitable(value):
            value = await value
        return int(value)

    @property
    def usable(self) -> int:
        return self.window - margin(self.window)

    async def output_for(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """`max_tokens` for this request: what the window leaves after its prompt, at most
        `OUTPUT_TOKENS`; 0 when less than `MIN_OUTPUT_TOKENS` is left (do not send it)."""
        left = self.usable - await self.count(messages, tools)
        return min(OUTPUT_TOKENS, left) if left >= MIN_OUTPUT_TOKENS else 0

    def planned_output(self, frame: int) -> int:
        """The answer's share of what a frame of `frame` tokens leaves: a third, at least
        `MIN_OUTPUT_TOKENS`, at most `OUTPUT_TOKENS`."""
        left = self.usable - frame
        return min(OUTPUT_TOKENS, max(MIN_OUTPUT_TOKENS, left // 3))

    def transcript_room(self, frame: int) -> int:
        """The tokens a transcript may take beside a frame of `frame` tokens and its answer."""
        return self.usable - frame - self.planned_output(frame)
