"""What a thinking model reasons before its answer, as the answer streams: told piece by piece
apart from the answer's text, counted (for the gauge and the output cap, which the engines
count over thinking and answer together), watched by its own repetition guard, and closed
with how long it took once the first answer token or tool call comes or the answer ends.

The reasoning is kept with the answer's message (`Message.reasoning`), never in its text.
"""

from __future__ import annotations

import time

from engine.events import EventSink, ReasoningEndEvent, ReasoningEvent, StateEvent
from engine.providers.base import REASONING_LEVELS, ReasoningLevel, Usage
from engine.repetition import Repetition, RepetitionGuard
from engine.tokens import TokenCounter
from engine.tokens.growing import GrowingCount


def reported_reasoning_tokens(usage: Usage) -> int | None:
    """The engine's own count of the reasoning tokens, where its usage says it (read by
    name: a provider may not report it)."""
    value = getattr(usage, "reasoning_tokens", None)
    return value if isinstance(value, int) and value >= 0 else None


class Thinking:
    """One answer's reasoning as it streams. `feed` each piece, `close` when the answer
    proper begins or the stream ends (said once per stretch of thinking), `settle` with the
    engine's usage (an exact count where it reports one)."""

    def __init__(self, counter: TokenCounter, sink: EventSink) -> None:
        self._sink = sink
        self._parts: list[str] = []
        self._count = GrowingCount(counter.count_text)
        self._guard = RepetitionGuard()
        self._started: float | None = None
        self._seconds = 0.0
        self.open = False  # a stretch of thinking is under way
        self.loop: Repetition | None = None
        self._exact: int | None = None

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def tokens(self) -> int:
        """Brim's count of the reasoning so far (the served model's counter)."""
        return self._count.tokens if self._parts else 0

    @property
    def seconds(self) -> float:
        """How long the model thought, over its stretches of thinking closed so far."""
        return round(self._seconds, 2)

    @property
    def exact(self) -> int | None:
        """The engine's own count of the reasoning, where its usage said it."""
        return self._exact

    @property
    def settled(self) -> int:
        """The tokens counted for good (cheap: for the output cap's check on every piece)."""
        return self._count.settled

    def feed(self, text: str) -> Repetition | None:
        """A piece of reasoning: told, counted and watched; the loop it closes, if any."""
        if not self.open:
            self.open = True
            self._started = time.monotonic()
            self._sink(StateEvent("thinking"))
        self._parts.append(text)
        self._count.add(text)
        self._sink(ReasoningEvent(text))
        self.loop = self._guard.feed(text)
        return self.loop

    def close(self) -> None:
        """The thinking stops here (an answer token, a tool call, the end): its figures told."""
        if not self.open:
            return
        self.open = False
        if self._started is not None:
            self._seconds += time.monotonic() - self._started
        self._sink(ReasoningEndEvent(self.tokens, round(self._seconds, 2), estimated=True))

    def settle(self, usage: Usage) -> None:
        """The engine's usage came: where it counts the reasoning itself, the figure is told
        again, exact (a second `reasoning_end` for the same thinking)."""
        exact = reported_reasoning_tokens(usage)
        if not self._parts:
            return
        self.close()
        self._exact = exact
        if exact is not None:
            self._sink(ReasoningEndEvent(exact, round(self._seconds, 2), estimated=False))

    def kept(self) -> str:
        """The reasoning as saved: a looping thought keeps one copy of its passage."""
        text = self.text
        return text[: self.loop.keep_chars] if self.loop is not None else text


def reasoning_level(setting: str, thinks: bool | None) -> ReasoningLevel | None:
    """What the agent's `reasoning` setting sends (ChatOptions.reasoning): None for
    "default" (the model and its engine decide), and None too where the engine says the
    model cannot reason and the agent asks for it (`refused_reasoning` says why)."""
    if setting not in REASONING_LEVELS:
        return None
    if refused_reasoning(setting, thinks):
        return None
    return setting  # type: ignore[return-value]


def refused_reasoning(setting: str, thinks: bool | None) -> bool:
    """The agent asks the model to reason and its engine says it cannot."""
    return thinks is False and setting in REASONING_LEVELS and setting != "off"


def reasoning_refused_text(setting: str, model: str) -> str:
    """Said once in a conversation: the agent's reasoning setting is not sent, and why."""
    return (
        f"The agent asks for reasoning ({setting}), but the engine reports that "
        f"{model or 'the model'} cannot reason (it has no thinking capability): Brim sends "
        "its requests without a reasoning setting."
    )
