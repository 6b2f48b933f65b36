"""A guard on the streamed answer that stops a model caught in a loop.

Small models fall into loops: the same line, sentence or paragraph again and again until the
output cap (or, without one, the window) is used up. Such a loop costs minutes and fills the
context with text nobody wants. The guard watches the end of the answer as it streams and
trips when it is one passage repeated back to back: a block of 1..`max_block` characters,
repeated at least `min_repeats` times and over at least `min_span` characters in all. The
span keeps short legitimate runs (a table's separator row, a column of zeros, a repeated
refrain) from tripping it: a 40-character line must come back 40 times in a row.

Exact repetition only, on purpose: a near-repeat (numbers that count up, reworded lines) can
be a real list, and a false stop loses a good answer, while the output cap ends any loop the
guard misses. The check costs a few substring searches every `check_every` characters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_SPAN = 1600  # characters of repetition (~400 tokens) before the guard trips
MIN_REPEATS = 4
MAX_BLOCK = 2000  # the longest passage it looks for (a long paragraph)
CHECK_EVERY = 32  # characters between checks
KEY = 16  # the answer's last characters, searched for earlier in the tail


@dataclass(frozen=True)
class Repetition:
    """What tripped the guard: a `block_chars`-long passage that ran `repeats` times in a row;
    `keep_chars` of the answer come before the loop plus one copy of the passage."""

    block_chars: int
    repeats: int
    keep_chars: int
    answer_chars: int

    @property
    def dropped_chars(self) -> int:
        return self.answer_chars - self.keep_chars


class RepetitionGuard:
    """Feed it the streamed text piece by piece; `feed` returns a `Repetition` once the
    answer loops, else None."""

    def __init__(
        self,
        *,
        min_span: int = MIN_SPAN,
        min_repeats: int = MIN_REPEATS,
        max_block: int = MAX_BLOCK,
        check_every: int = CHECK_EVERY,
    ) -> None:
        self.min_span = min_span
        self.min_repeats = min_repeats
        self.max_block = max_block
        self.check_every = check_every
        # The tail is all a check needs: the longest span any block length requires.
        self._need = max(self._span(p) for p in (1, math.ceil(min_span / min_repeats), max_block))
        self._tail = ""
        self._offset = 0  # characters of the answer before the tail
        self._unchecked = 0

    def _span(self, block: int) -> int:
        return block * max(self.min_repeats, math.ceil(self.min_span / block))

    def feed(self, text: str) -> Repetition | None:
        self._tail += text
        self._unchecked += len(text)
        if len(self._tail) > 2 * self._need:
            cut = len(self._tail) - self._need
            self._tail = self._tail[cut:]
            self._offset += cut
        if self._unchecked < self.check_every:
            return None
        self._unchecked = 0
        return self._check()

    def _check(self) -> Repetition | None:
        tail = self._tail
        n = len(tail)
        if n < min(self._span(p) for p in (1, self.max_block)):
            return None
        key = tail[-KEY:]
        lowest = max(0, n - KEY - self.max_block)
        # Each earlier place the answer's last characters occur is a candidate block length.
        found = tail.rfind(key, lowest, n - 1)
        while found >= 0:
            block = n - KEY - found
            span = self._span(block)
            if span <= n and tail[n - span : n - block] == tail[n - span + block :]:
                return self._measure(block)
            found = tail.rfind(key, lowest, found + KEY - 1)
        return None

    def _measure(self, block: int) -> Repetition:
        """How far back the loop goes in the tail (the smallest start from which the tail
        repeats with period `block`), found by bisection on slice comparisons."""
        tail = self._tail
        n = len(tail)
        lo, hi = 0, n - self._span(block)  # hi is known to repeat
        while lo < hi:
            mid = (lo + hi) // 2
            if tail[mid : n - block] == tail[mid + block :]:
                hi = mid
            else:
                lo = mid + 1
        # One copy is kept; where a copy starts is a matter of rotation ("\nA" or "A\n"), so
        # a passage of lines ends the kept text at a line's end.
        keep = lo + block
        newline = tail.find("\n", keep, keep + block)
        if newline >= 0:
            keep = newline + 1
        return Repetition(
            block_chars=block,
            repeats=(n - lo) // block,
            keep_chars=self._offset + keep,
            answer_chars=self._offset + n,
        )
