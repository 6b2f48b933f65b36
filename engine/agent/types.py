"""What the agent loop (engine/agent/loop.py) works with and hands back: the conversation and the
tool runner it is given (protocols the session meets), a tool's run, a turn's outcome, and
the answer and running totals of a turn as the loop keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.messages import Message, ToolCall
from engine.providers.base import Usage
from engine.providers.errors import ProviderError
from engine.repetition import Repetition


class Conversation(Protocol):
    """The session's side of the loop: the live history and the two ways to change it."""

    def live(self) -> list[Message]: ...

    def append(self, message: Message) -> None: ...

    def replace(self, model_history: list[Message]) -> None: ...


class ToolRunner(Protocol):
    """Runs the tools the model asks for (engine/tools); None: the agent has no tools."""

    def schemas(self) -> list[dict[str, Any]]: ...

    async def run(self, call: ToolCall) -> ToolRun: ...


@dataclass
class ToolRun:
    content: str
    chars: int
    truncated: bool
    is_error: bool = False


@dataclass
class TurnOutcome:
    text: str
    prompt_tokens: int
    completion_tokens: int
    elapsed_s: float
    finish_reason: str | None
    iterations: int = 1
    cached_tokens: int | None = None  # the last request's prompt cache; None: not reported
    error: ProviderError | None = None
    stopped: str | None = None  # why the loop stopped early: "iteration_limit", "budget"


FINISH_LENGTH = "length"  # the engines' word for an answer stopped at its max_tokens
FINISH_REPETITION = "repetition"  # Brim's: the repetition guard stopped the answer


@dataclass
class Answer:
    """One streamed answer as the loop keeps it."""

    text: str
    calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: str | None
    first_token: float | None
    repetition: Repetition | None = None
    # Stopped by Brim: the engine wrote past the output cap and its margin (max_tokens ignored).
    overran: bool = False
    # Calls past the cap on calls per answer; the last of `calls` stands for them.
    calls_not_run: int = 0
    ended: float | None = None  # monotonic time the stream ended (generation's end)
    # What a thinking model reasoned before the answer (kept with the message, not its text),
    # and its tokens by Brim's count.
    reasoning: str = ""
    reasoning_tokens: int = 0
    reasoning_s: float = 0.0  # how long it thought
    reasoning_exact: bool = False  # reasoning_tokens is the engine's count, not Brim's
    # The repetition guard stopped the reasoning (not the answer's text).
    looped_in_reasoning: bool = False

    @property
    def thought_only(self) -> bool:
        """The model reasoned and wrote no answer: no text (or only blanks), no calls."""
        return bool(self.reasoning.strip()) and not self.text.strip() and not self.calls


@dataclass
class Totals:
    """A turn's running totals over its requests."""

    prompt: int = 0
    cached: int | None = None  # what the engine's cache served of the last request
    completion: int = 0
    eval_s: float = 0.0
    generating_s: float = 0.0
    spent: int = 0  # tokens this run has cost, for the per-run budget
    last_text: str = ""
    finish: str | None = None
    calls_made: list[str] = field(default_factory=list)

    def outcome(
        self,
        elapsed_s: float,
        iterations: int,
        *,
        error: ProviderError | None = None,
        stopped: str | None = None,
    ) -> TurnOutcome:
        """The turn as it ended, from these totals."""
        return TurnOutcome(
            self.last_text,
            self.prompt,
            self.completion,
            elapsed_s,
            self.finish,
            iterations=iterations,
            cached_tokens=self.cached,
            error=error,
            stopped=stopped,
        )
