"""Whether a window an engine's error implies is believed before the session runs on it.

An overflow error is one message from an engine, and one absurd message must not rule the
session: a llama-server error naming `n_ctx: 300` while its `/props` says 8,192 refused 5 of
the next 6 lines, and an error with `n_prompt_tokens` 2,000 beside a window of a trillion
became a 2,000-token window. So a lesson drawn from an error (engine/window/learning.py) is
checked first, against three things Brim knows without the error:

- the floor: a window no larger than the fixed prefix every request carries (system prompt,
  tool schemas, framing) could not have answered the requests already answered;
- the request itself: the error's prompt size must agree with Brim's own count of the
  request it rejected (within the measured counting error), a window it names must be one
  this request could exceed, and a window no model has makes the whole error's figures
  suspect;
- what the engine reports when asked again (llama-server `/props`, vLLM and SGLang
  `/v1/models`, Ollama `/api/ps`): llama-server's error names the slot's `n_ctx`, which
  `/props` reports, and vLLM's the `max_model_len` its models list carries, so a named
  window the report contradicts is not believed; a smaller window the report now states
  is taken from the report.

A lesson that passes stays provisional: `contradicted` says when a later request larger
than it was answered, and the loop then drops it.

The functions are pure, so each rule is checked from a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.providers.errors import ContextOverflow
from engine.window.learning import WindowLesson, sane

DoubtReason = Literal[
    "absurd_window",  # the error names a window no model has
    "below_fixed_prefix",  # the window would not hold what every request carries
    "count_disagrees",  # the error's prompt size is not the size of the request sent
    "request_smaller",  # the request was smaller than the window the error names
    "engine_reports",  # the engine, asked again, reports another window
]

# Causes whose window is only as good as one error or one cut: dropped when contradicted.
PROVISIONAL_CAUSES: frozenset[str] = frozenset({"overflow", "rejected_below_report", "truncation"})


@dataclass(frozen=True)
class Doubt:
    """Why a window drawn from an error is not believed, with the figures that decided."""

    figure: int  # the window the error implied
    cause: str  # the lesson's cause (overflow | rejected_below_report)
    reason: DoubtReason
    evidence: int | None = None  # the figure that contradicts it (report, count, prefix)


def agrees(a: int, b: int, tolerance: float) -> bool:
    """Two counts of one request that differ by no more than `tolerance` of the larger."""
    return abs(a - b) <= tolerance * max(a, b, 1)


def doubt_overflow(
    lesson: WindowLesson | None,
    exc: ContextOverflow,
    *,
    sent: int,
    needed: int,
    tolerance: float,
    fixed_tokens: int,
) -> Doubt | None:
    """The checks that need no engine call. `sent` is Brim's count of the rejected prompt,
    `needed` what the engine weighs against its window (the prompt, plus the answer's room
    on engines that reserve it), `tolerance` the relative counting error Brim allows."""
    named = exc.window
    figure = lesson.window if lesson is not None else named
    cause = lesson.cause if lesson is not None else "overflow"
    if named is not None and not sane(named):
        return Doubt(figure or named, cause, "absurd_window", named)
    if lesson is None:
        return None
    prompt = exc.prompt_tokens
    if prompt and prompt > 0 and sent > 0 and not agrees(prompt, sent, tolerance):
        return Doubt(lesson.window, cause, "count_disagrees", sent)
    if lesson.window <= fixed_tokens:
        return Doubt(lesson.window, cause, "below_fixed_prefix", fixed_tokens)
    if cause == "overflow" and needed > 0 and needed < lesson.window * (1 - tolerance):
        return Doubt(lesson.window, cause, "request_smaller", needed)
    return None


def report_lesson(reported: int | None, *, current: int) -> WindowLesson | None:
    """The window the engine reports when asked again, as a lesson where it is smaller
    than the one Brim accounts against (a larger one is the probe's business)."""
    if reported is None or not sane(reported) or reported >= current:
        return None
    return WindowLesson(reported, "server", "reported")


def against_report(
    lesson: WindowLesson, reported: int | None, *, current: int, rejected: int | None = None
) -> tuple[WindowLesson | None, Doubt | None]:
    """The lesson checked against what the engine reports now: (the lesson to apply, the
    doubt to tell). A named window the report contradicts is not believed; the size of the
    request it rejected (`rejected`) is then learned as a rejection below the report, or
    else the report where it is smaller than the window Brim accounts against. A rejection
    below the report stands (slots sharing one KV pool run out below it) unless the report
    itself is at or below the size rejected, when the report explains the rejection."""
    if reported is None or not sane(reported):
        return lesson, None
    from_report = report_lesson(reported, current=current)
    if lesson.cause == "overflow" and reported != lesson.window:
        # The named figure is not the engine's window; the rejection itself still stands,
        # as one below the report (the rule for a slot starved in a shared KV pool).
        doubt = Doubt(lesson.window, lesson.cause, "engine_reports", reported)
        if rejected is not None and sane(rejected) and rejected < min(current, reported):
            return WindowLesson(rejected, "observed", "rejected_below_report"), doubt
        return from_report, doubt
    if lesson.cause == "rejected_below_report" and reported <= lesson.window:
        return from_report, None
    return lesson, None


def contradicted(lesson: WindowLesson, answered: int) -> bool:
    """A provisional window is contradicted by a request larger than it that the engine
    answered (its own prompt count where it reports one)."""
    return lesson.cause in PROVISIONAL_CAUSES and answered > lesson.window


DOUBT_WORDS: dict[str, str] = {
    "absurd_window": "it names a {evidence:,}-token window, which no model has",
    "below_fixed_prefix": (
        "that is no larger than the {evidence:,} tokens of system prompt and tool schemas "
        "every request carries"
    ),
    "count_disagrees": "the request it rejected was {evidence:,} tokens by Brim's count",
    "request_smaller": "the request it rejected was only {evidence:,} tokens",
    "engine_reports": "the engine itself reports {evidence:,}",
}


def doubt_text(engine: str, doubt: Doubt, window: int) -> str:
    """The notice for a window that is not believed: the figure, where it came from, why."""
    why = DOUBT_WORDS[doubt.reason].format(evidence=doubt.evidence or 0)
    return (
        f"{engine}'s overflow error implies a {doubt.figure:,}-token window; Brim does not "
        f"believe it ({why}) and keeps accounting against {window:,}."
    )
