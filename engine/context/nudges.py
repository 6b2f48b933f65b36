"""Ephemeral pressure lines for the model, and the user-visible iteration ramp.

The nudges ride on the outgoing request only, as one appended message, and are never
stored: a persisted warning would cost tokens exactly when they are scarce, be re-sent
every turn, and end up summarized into the compaction it warned about.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.context.budget import ContextUsage
from engine.context.constants import (
    ITERATION_CRITICAL_RATIO,
    ITERATION_PRESSURE_THRESHOLDS,
    ITERATION_WARN_RATIO,
)
from engine.messages import Message

EPHEMERAL_META = "ephemeral"


def context_warning_line(usage: ContextUsage) -> str:
    return (
        f"[CONTEXT WARNING: the context window is {round(usage.percent)}% full "
        f"(~{usage.used:,} of {usage.window:,} tokens). Record what you need, consolidate what "
        f"you have, and do not gather more material than the task requires.]"
    )


def context_critical_line(usage: ContextUsage) -> str:
    return (
        f"[CONTEXT CRITICAL: the context window is {round(usage.percent)}% full "
        f"(~{usage.used:,} of {usage.window:,} tokens). Write your output now.]"
    )


def context_compacted_line(usage: ContextUsage | None = None) -> str:
    text = (
        "[CONTEXT COMPACTED: older messages were replaced by a checkpoint summary to free "
        "space. Resume from the summary and continue until the user's request is fully "
        "complete."
    )
    if usage is not None and usage.critical:
        text += (
            f" Context is still tight ({round(usage.percent)}% full): keep tool output small "
            f"and prefer targeted reads."
        )
    return text + "]"


def context_nudge(usage: ContextUsage, *, just_compacted: bool = False) -> str | None:
    """The one context line this request carries, if any. After a compaction the wrap-up
    lines are replaced: space was just freed so the task can continue, not end."""
    if just_compacted:
        return context_compacted_line(usage)
    if usage.critical:
        return context_critical_line(usage)
    if usage.warn:
        return context_warning_line(usage)
    return None


def _bounded(max_iterations: int | float | None) -> bool:
    return max_iterations is not None and math.isfinite(max_iterations) and max_iterations > 0


def iteration_nudge(used: int, max_iterations: int | float | None) -> str | None:
    """`used` is the number of iterations already run before this request."""
    if not _bounded(max_iterations):
        return None
    assert max_iterations is not None
    cap = int(max_iterations)
    left = max(0, cap - used)
    if used >= cap * ITERATION_CRITICAL_RATIO:
        return (
            f"[ITERATION CRITICAL: {used} of {cap} iterations used, {left} left. Finish now: "
            f"write your final answer with what you have.]"
        )
    if used >= cap * ITERATION_WARN_RATIO:
        return (
            f"[ITERATION WARNING: {used} of {cap} iterations used, {left} left. Start wrapping "
            f"up: prioritise the essential remaining steps.]"
        )
    return None


def pressure_message(lines: Sequence[str | None]) -> Message | None:
    """Merge every line that fired into one appended user message (none when none fired)."""
    text = "\n\n".join(line for line in lines if line)
    if not text:
        return None
    return Message(role="user", content=text, meta=((EPHEMERAL_META, True),))


def iteration_pressure_text(threshold: float, used: int, cap: int) -> str:
    """`iteration budget 70% used (70/100) - run stops at the limit, type 'continue' to keep
    it going`"""
    return (
        f"iteration budget {round(threshold * 100)}% used ({used}/{cap}) - run stops at the "
        f"limit, type 'continue' to keep it going"
    )


@dataclass
class IterationPressure:
    """Fires the user-visible ramp once per threshold (50/70/90%) on a bounded run. A run
    with no cap never warns. When one step crosses several thresholds, only the highest is
    reported."""

    max_iterations: int | float | None
    thresholds: tuple[float, ...] = ITERATION_PRESSURE_THRESHOLDS
    fired: set[float] = field(default_factory=set)

    def check(self, used: int) -> str | None:
        if not _bounded(self.max_iterations):
            return None
        assert self.max_iterations is not None
        cap = int(self.max_iterations)
        crossed = [t for t in self.thresholds if used >= cap * t and t not in self.fired]
        if not crossed:
            return None
        self.fired.update(crossed)
        if used >= cap:
            return None  # the limit itself is reported by the loop, not as pressure
        return iteration_pressure_text(max(crossed), used, cap)

    def reset(self) -> None:
        """The user typed 'continue': the ramp starts over for the extended run."""
        self.fired.clear()
