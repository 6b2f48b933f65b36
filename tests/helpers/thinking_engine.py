"""The in-process engine (tests/helpers/fake_provider.py) as a thinking model: before each
answer it streams what the test scripts as its reasoning, apart from the answer, as the
providers hand it on (`ReasoningDelta`: Ollama's `message.thinking`, llama-server's
`reasoning_content`, vLLM's `reasoning`). What the engine reports of itself can say whether
the model can reason (`thinks`).

    engine = ThinkingEngine(window=4096)
    engine.think(["Let me see. ", "Two and two."])     # the next answer's reasoning
    engine.script("Four.")                              # then its answer, as before
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

from engine.messages import Message
from engine.providers.base import ChatOptions, EngineReport, ReasoningDelta, StreamItem
from tests.helpers.fake_provider import InProcessEngine


class ThinkingEngine(InProcessEngine):
    def __init__(self, *, thinks: bool | None = None, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.thinks = thinks
        self._thoughts: list[tuple[list[str], float]] = []
        self.options: list[ChatOptions] = []  # every request's options, in order

    def think(self, pieces: list[str], *, delay_s: float = 0.0) -> None:
        """The next answer's reasoning, streamed as these pieces before its text (a pause
        of `delay_s` before each, as a model thinking at its own pace)."""
        self._thoughts.append((list(pieces), delay_s))

    async def report(self, model: str) -> EngineReport:
        report = await super().report(model)
        if self.thinks is None:
            return report
        # The field the providers add for a model's thinking capability, where it exists.
        try:
            return replace(report, thinks=self.thinks)  # type: ignore[call-arg]
        except TypeError:
            object.__setattr__(report, "thinks", self.thinks)
            return report

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        self.options.append(options)
        pieces, delay_s = self._thoughts.pop(0) if self._thoughts else ([], 0.0)
        for piece in pieces:  # it thinks first (a request too long is refused after)
            if delay_s:
                await asyncio.sleep(delay_s)
            yield ReasoningDelta(piece)
        async for item in super().stream_chat(model, messages, options):
            yield item
