"""Telling Ollama's silent cut from Brim's own counting error.

Ollama cuts a prompt longer than its window and answers 200; the only sign is a
`prompt_eval_count` below what was sent. But a heuristic count is itself off by 10-40%
(prose runs ~4.5 characters a token, code and numbers 2-3), so "the engine read 15% less
than Brim counted" is as often Brim's error as Ollama's cut. Flagging that as truncation
was worse than useless: a flagged request is not calibrated on, so the error never shrank.

What survives counting error: Ollama only cuts a prompt that exceeds its window, and then
evaluates no more than the window. So a request is flagged only when even the lowest count
the error allows is above the window the engine served, and the engine read at most that
window. The allowed error is measured: how far Brim's counts have landed from the engine's
on the requests that were not cut (exact counters get a few percent).
"""

from __future__ import annotations

from dataclasses import dataclass

# Before any request has landed a heuristic may be off by more than half (a family ratio of
# 3.6 characters a token against a tokenizer that packs 6); an exact count by framing only.
UNCALIBRATED_TOLERANCE = 0.6
EXACT_TOLERANCE = 0.03
# Measured error is noisy: trust it with a margin, and never below this floor.
MIN_TOLERANCE = 0.12
ERROR_MARGIN = 2.5
ERROR_SMOOTHING = 0.5  # weight of the error known before each new observation
# A report within this share of the window is at its edge: it may be a prompt that just fit or
# one that was cut to fit, so it neither proves a cut nor teaches the counter.
EDGE_SHARE = 0.97


@dataclass
class CountError:
    """How far Brim's counts land from the engine's, as a share of the engine's count."""

    exact: bool = False
    observed: float | None = None
    samples: int = 0

    @property
    def tolerance(self) -> float:
        """The relative error a count may have and still be Brim's mistake, not a cut."""
        if self.exact:
            return EXACT_TOLERANCE
        if self.observed is None:
            return UNCALIBRATED_TOLERANCE
        return max(MIN_TOLERANCE, ERROR_MARGIN * self.observed)

    def observe(self, counted: int, reported: int) -> None:
        """A request that was not cut landed: learn how far the count was from the truth."""
        if counted <= 0 or reported <= 0:
            return
        error = abs(counted - reported) / reported
        if self.observed is None:
            self.observed = error
        else:
            self.observed = ERROR_SMOOTHING * self.observed + (1 - ERROR_SMOOTHING) * error
        self.samples += 1


def at_window_edge(reported: int, window: int) -> bool:
    """The engine read (almost) the whole window: a full prompt or a cut one, nobody knows."""
    return window > 0 and reported >= EDGE_SHARE * window


def silently_truncated(
    counted: int, reported: int | None, *, window: int, error: CountError
) -> bool:
    """True only on evidence that survives counting error: even the lowest true size the
    measured error allows is above `window` (the window the engine served for this request),
    and the engine read no more than that window."""
    if reported is None or reported <= 0 or counted <= 0 or window <= 0:
        return False
    if reported > window:
        return False  # Ollama never evaluates more than it holds: nothing was cut to it
    lowest_true = counted / (1.0 + error.tolerance)
    return lowest_true > window and reported < lowest_true
