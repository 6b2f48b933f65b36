"""One window, every threshold: the single place that turns ratios into token counts.

`ContextBudget.usage()` answers every rung's question from one count, so the warning, the
compaction trigger and the trim check can never disagree about how full the context is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.context.constants import (
    CONTEXT_CLEAR_THRESHOLD_RATIO,
    CONTEXT_CRITICAL_RATIO,
    CONTEXT_WARN_RATIO,
    DEFAULT_COMPACTION_RATIO,
    JOURNAL_FREE_SHARE,
    JOURNAL_PREAMBLE_TOKENS,
    OVERFLOW_TRIM_RATIO,
    POST_COMPACTION_RATIO,
    RECENT_TAIL_MAX_TOKENS,
    RECENT_TAIL_MIN_TOKENS,
    RECENT_TAIL_RATIO,
    SMALL_WINDOW_TOKENS,
    SUMMARY_FREE_SHARE,
    SUMMARY_MAX_TOKENS,
    SUMMARY_MAX_TOKENS_RATIO,
    SUMMARY_MIN_TOKENS,
    SUMMARY_PROMPT_MARGIN_TOKENS,
    TAIL_MIN_FREE_SHARE,
    TOOL_RESULT_MAX_TOKENS,
    TOOL_RESULT_MIN_TOKENS,
    TOOL_RESULT_TAIL_SHARE,
    TRIM_RATIO,
)


def recent_tail_tokens(window: int) -> int:
    """The recent tail's budget: 20% of the window clamped to 8K-40K; under a 32K window
    the floor is a quarter of the window, so the rebuild still lands under the warn rung."""
    floor = RECENT_TAIL_MIN_TOKENS if window >= SMALL_WINDOW_TOKENS else window // 4
    return max(floor, min(RECENT_TAIL_MAX_TOKENS, int(window * RECENT_TAIL_RATIO)))


def replay_margin(window: int) -> int:
    """What a request on the cached conversation leaves spare beside its answer (a count
    that runs short): 128 tokens, less on a small window, which has no 128 to spare."""
    return min(SUMMARY_PROMPT_MARGIN_TOKENS, window // 32)


def replay_min_answer(window: int) -> int:
    """The shortest checkpoint answer worth asking for on `window`."""
    return min(SUMMARY_MIN_TOKENS, window // 16)


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

    `output_reserve` is the answer's room an engine adds to the prompt before it checks the
    window (vLLM and SGLang reject prompt + max_tokens > max_model_len): every rung is then a
    share of the window minus it. `fixed_tokens` is the fixed prefix every request carries
    (system prompt, tool schemas, framing): the recent tail, the summary and a tool result's
    first cut are sized from what it leaves, not from the raw window.
    """

    window: int
    compaction_ratio: float = DEFAULT_COMPACTION_RATIO
    reserve_tokens: int | None = None
    output_reserve: int = 0
    fixed_tokens: int = 0
    # What a compaction on the cached conversation needs beside it (its instruction, a
    # margin and the shortest answer): the trigger leaves that much of the window free.
    compaction_room: int = 0

    def with_fixed(self, fixed_tokens: int) -> ContextBudget:
        """The same budget with the fixed prefix measured anew."""
        return replace(self, fixed_tokens=max(0, fixed_tokens))

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
    def prompt_space(self) -> int:
        """What the prompt may use: the window less the answer's reserved room (at most half
        the window, so a max_tokens near the window still leaves a prompt)."""
        return self.window - min(max(0, self.output_reserve), self.window // 2)

    @property
    def clear_threshold(self) -> int:
        return int(self.prompt_space * CONTEXT_CLEAR_THRESHOLD_RATIO)

    @property
    def warn_threshold(self) -> int:
        return int(self.prompt_space * CONTEXT_WARN_RATIO)

    @property
    def critical_threshold(self) -> int:
        return int(self.prompt_space * CONTEXT_CRITICAL_RATIO)

    @property
    def _ratio_threshold(self) -> int:
        """The trigger the agent's ratio or reserve sets (what the budgets are sized from)."""
        if self.reserve_tokens is not None:
            return max(1, min(self.window - self.reserve_tokens, self.prompt_space))
        return int(self.prompt_space * self.compaction_ratio)

    @property
    def compact_threshold(self) -> int:
        """The trigger: the ratio's, earlier where a compaction on the cached conversation
        would have no room beside it (at 80% of 1,024 it had -73 tokens), never below half
        the window. The checkpoint's and the tail's budgets stay the ratio's."""
        threshold = self._ratio_threshold
        if self.compaction_room:
            threshold = min(threshold, max(self.window // 2, self.window - self.compaction_room))
        return threshold

    @property
    def trim_threshold(self) -> int:
        return max(int(self.prompt_space * TRIM_RATIO), self.compact_threshold)

    @property
    def free_tokens(self) -> int:
        """What the conversation may fill before compaction, after the fixed prefix."""
        return max(0, self._ratio_threshold - max(0, self.fixed_tokens))

    @property
    def summary_tokens(self) -> int:
        """The summary's own budget: a share of the free space, clamped (and never more
        than a quarter of it, however small it is)."""
        free = self.free_tokens
        floor = min(SUMMARY_MIN_TOKENS, free // 4)
        return max(64, floor, min(SUMMARY_MAX_TOKENS, int(free * SUMMARY_FREE_SHARE)))

    @property
    def tail_tokens(self) -> int:
        """The recent tail kept verbatim by compaction: what keeps the rebuilt request (fixed
        prefix + summary + tail) under POST_COMPACTION_RATIO of the prompt space, within the
        clamps of `recent_tail_tokens`, and never below a fifth of the free space."""
        # The rebuild lands under the post-compaction share, and well under an earlier trigger.
        after = min(int(self.prompt_space * POST_COMPACTION_RATIO), self.compact_threshold * 3 // 4)
        room = after - self.fixed_tokens
        room -= self.summary_tokens
        floor = max(64, int(self.free_tokens * TAIL_MIN_FREE_SHARE))
        return max(floor, min(recent_tail_tokens(self.prompt_space), room))

    @property
    def tool_result_tokens(self) -> int:
        """How long a tool result may be when it first enters the history (and a read_file
        page): it must fit the recent tail, so the next compaction keeps it verbatim."""
        share = int(self.tail_tokens * TOOL_RESULT_TAIL_SHARE)
        return max(TOOL_RESULT_MIN_TOKENS, min(TOOL_RESULT_MAX_TOKENS, share))

    def journal_tokens(self, used: int) -> int:
        """The resumed journal preamble's budget beside a history of `used` tokens (the
        request as it stands): a share of the free space, at most JOURNAL_PREAMBLE_TOKENS,
        and no more than leaves the request under the warn rung, so folding the journal in
        never makes the next turn compact or trim what it was resumed with."""
        share = min(JOURNAL_PREAMBLE_TOKENS, int(self.free_tokens * JOURNAL_FREE_SHARE))
        return max(0, min(share, self.warn_threshold - used))

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
            over_window=used > self.prompt_space,
        )


def overflow_trim_budget(history_tokens: int) -> int:
    """Overflow without a summary: trim to 70% of what the rejected history counted."""
    return int(history_tokens * OVERFLOW_TRIM_RATIO)
