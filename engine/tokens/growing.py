"""The tokens of an answer as it streams, counted once each.

The gauge shows an answer's size while it grows, and the client-side output cap stops an
engine that writes past `max_tokens`. Counting the whole answer again at every report makes
a long answer quadratic (a 1 MB answer re-encoded every few KB); so the text is counted in
pieces cut where tokenizers cut anyway (before a space or line break that ends a word) and
only the unfinished tail is counted again. The sum differs from a count of the whole text by
at most a token at a forced cut (a piece with no word boundary in it), which a gauge and a
cap with a margin can live with.
"""

from __future__ import annotations

from collections.abc import Callable

# Text is settled (counted for good) in pieces of about this many characters.
PIECE_CHARS = 2048


def _cut(text: str) -> int:
    """Where to cut `text` (len > PIECE_CHARS): before the last whitespace that follows a
    non-space, in its second half; else a forced cut at PIECE_CHARS."""
    for index in range(len(text) - 1, PIECE_CHARS // 2, -1):
        if text[index].isspace() and not text[index - 1].isspace():
            return index
    return PIECE_CHARS


class GrowingCount:
    """Tokens of a text that only grows at its end; `count` counts a bare text."""

    def __init__(self, count: Callable[[str], int], *, limit: int | None = None) -> None:
        """`limit`: `over` turns True once the settled text alone has more tokens."""
        self._count = count
        self._limit = limit
        self.settled = 0  # tokens of the text before the tail, counted for good
        self._tail: list[str] = []
        self._tail_chars = 0

    def add(self, text: str) -> None:
        self._tail.append(text)
        self._tail_chars += len(text)
        if self._tail_chars <= 2 * PIECE_CHARS:
            return
        tail = "".join(self._tail)
        start = 0
        while len(tail) - start > PIECE_CHARS:
            window = tail[start : start + 2 * PIECE_CHARS]
            at = _cut(window)
            self.settled += self._count(window[:at])
            start += at
        rest = tail[start:]
        self._tail, self._tail_chars = [rest], len(rest)

    @property
    def over(self) -> bool:
        return self._limit is not None and self.settled > self._limit

    @property
    def tokens(self) -> int:
        """The whole text's tokens: the settled pieces plus the tail counted now."""
        if not self._tail_chars:
            return self.settled
        return self.settled + self._count("".join(self._tail))
