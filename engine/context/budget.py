"""One window, every threshold: the single place that turns ratios into token counts.

`ContextBudget.usage()` answers every rung's question from one count, so the warning, the
compaction trigger and the trim check can never disagree about how full the context is.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.context.constants import (
    CONTEXT_CLEAR_THRESHOLD_RATIO,
    CONTEXT_CRITICAL_RATIO,
    CONTEXT_WARN_RATIO,
    DEFAULT_COMPACTION_RATIO,
    OVERFLOW_TRIM_RATIO,
    RECENT_TAIL_MAX_TOKENS,
    RECENT_TAIL_MIN_TOKENS,
    RECENT_TAIL_RATIO,
    SMALL_WINDOW_TOKENS,
    SUMMARY_MAX_TOKENS,
    SUMMARY_MAX_TOKENS_RATIO,
    SUMMARY_MIN_TOKENS,
    TRIM_RATIO,
)


def recent_tail_tokens(window: int) -> int:
    """The recent tail's budget: 20% of the window clamped to 8K-40K; under a 32K window
    the floor is a quarter of the window, so the rebuild still lands under the warn rung."""
    floor = RECENT_TAIL_MIN_TOKENS if window >= SMALL_WINDOW_TOKENS else window // 4
    return max(floor, min(RECENT_TAIL_MAX_TOKENS, int(window * RECENT_TAIL_RATIO)))


def summary_max_tokens(window: int) -> int:
    """The summarizer's output limit for a window: small enough to leave room for the tail."""
    share = int(window * SUMMARY_MAX_TOKENS_RATIO)
    return max(SUMMARY_MIN_TOKENS, min(SUMMARY_MAX_TOKENS, share))


@dataclass(frozen=True)
class ContextUsage:
    """How full one request is, with every rung's flag computed from the same count."""

    used: int
    window: int
    percent: float  # 0-100 (may exceed 100)
    clear_due: bool  # above 50%: old large tool results may be stubbed
    warn: bool  # above 70%
    critical: bool  # above 90%
    compact_due: bool  # at or above the compaction threshold
    trim_due: bool  # above the trim budget (95%)
    over_window: bool  # the request cannot be sent as is

    @property
    def ratio(self) -> float:
        return self.used / self.window if self.window else 0.0


@dataclass(frozen=True)
class ContextBudget:
    """The thresholds of one context budget (the effective window, ceiling applied).

    `reserve_tokens` (compaction_reserve_tokens) pins absolute headroom and wins over
    `compaction_ratio`. The trim budget is 95% of the window but never below the compaction
    threshold, so compaction always gets first refusal even with a tiny reserve.
    """

    window: int
    compaction_ratio: float = DEFAULT_COMPACTION_RATIO
    reserve_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ValueError(f"context window must be positive, got {self.window}")
        if not 0 < self.compaction_ratio <= 1:
            raise ValueError(f"compaction_ratio must be in (0, 1], got {self.compaction_ratio}")
        if self.reserve_tokens is not None and not 0 <= self.reserve_tokens < self.window:
            raise ValueError(
                f"compaction_reserve_tokens must be in [0, {self.window}), "
                f"got {self.reserve_tokens}"
            )

    @property
    def clear_threshold(self) -> int:
        return int(self.window * CONTEXT_CLEAR_THRESHOLD_RATIO)

    @property
    def warn_threshold(self) -> int:
        return int(self.window * CONTEXT_WARN_RATIO)

    @property
    def critical_threshold(self) -> int:
        return int(self.window * CONTEXT_CRITICAL_RATIO)

    @property
    def compact_threshold(self) -> int:
        if self.reserve_tokens is not None:
            return self.window - self.reserve_tokens
        return int(self.window * self.compaction_ratio)

    @property
    def trim_threshold(self) -> int:
        return max(int(self.window * TRIM_RATIO), self.compact_threshold)

    @property
    def tail_tokens(self) -> int:
        return recent_tail_tokens(self.window)

    @property
    def summary_tokens(self) -> int:
        return summary_max_tokens(self.window)

    def headroom(self, used: int) -> int:
        """Tokens available before auto-compact (the rail's headroom line)."""
        return max(0, self.compact_threshold - used)

    def usage(self, used: int) -> ContextUsage:
        return ContextUsage(
            used=used,
            window=self.window,
            percent=100.0 * used / self.window,
            clear_due=used > self.clear_threshold,
            warn=used > self.warn_threshold,
            critical=used > self.critical_threshold,
            compact_due=used >= self.compact_threshold,
            trim_due=used > self.trim_threshold,
            over_window=used > self.window,
        )


def overflow_trim_budget(history_tokens: int) -> int:
    """Overflow without a summary: trim to 70% of what the rejected history counted."""
    return int(history_tokens * OVERFLOW_TRIM_RATIO)
