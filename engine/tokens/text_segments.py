"""Per-message counts through an engine that tokenizes text but cannot count a chat.

SGLang's `/v1/tokenize` takes text, not messages: the chat template's framing is not in
what it counts. A message then costs its text's tokens, counted by the engine (each new
message once, all its parts in one request), plus the framing the heuristic gives every
message; what the template adds beyond that (a system block, a generation prompt, a tools
preamble) is the counter's residual, learned from the prompt tokens each answer reports,
as for a local Ollama's text counted from its model file. `/context` calls it "exact text".
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from engine.messages import Message
from engine.tokens.calibration import SEED_REQUEST_OVERHEAD, heuristic_framing, message_text

# The engine's tokens of each text, or None when it cannot say.
CountTexts = Callable[[list[str]], Awaitable[list[int] | None]]

_PROBE = "x"


class TextSegments:
    """`EngineSegments`' interface, counting text only (`text_only`): `engine` says how,
    for `/context`. Every method answers None when the engine could not count."""

    text_only = True

    def __init__(self, count_texts: CountTexts, engine: str) -> None:
        self._count_texts = count_texts
        self.engine = engine
        self.calls = 0  # requests the engine was asked to count, for tests and benches

    async def _count(self, texts: list[str]) -> list[int] | None:
        self.calls += 1
        counts = await self._count_texts(texts)
        return counts if counts is not None and len(counts) == len(texts) else None

    async def count_message(self, message: Message) -> int | None:
        parts = [p for p in message_text(message) if p]
        counts = await self._count(parts) if parts else []
        return None if counts is None else sum(counts) + heuristic_framing(message)

    async def request_overhead(self) -> int | None:
        """The generation prompt's seed; asking the engine once also tells whether it can
        count at all (an older SGLang has no /v1/tokenize)."""
        return None if await self._count([_PROBE]) is None else SEED_REQUEST_OVERHEAD

    async def count_tools(self, tools: list[dict[str, Any]]) -> int | None:
        if not tools:
            return 0
        counts = await self._count([json.dumps(tools, ensure_ascii=False, sort_keys=True)])
        return None if counts is None else counts[0]
