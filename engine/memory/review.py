"""A memory review's rules, shared by the terminal (`brim memory review`, engine/cli/review.py)
and the desktop's dialog: pages of at most `REVIEW_PAGE_SIZE` waiting suggestions; on each
the person names the items to accept and the rest of that page is rejected, so nothing is
rejected without having been on screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REVIEW_PAGE_SIZE = 8


@dataclass
class ReviewResult:
    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, why) still queued
    left_waiting: int = 0


def parse_selection(line: str, size: int) -> list[int] | None:
    """1-based item numbers → 0-based indexes; None when the line is not a selection."""
    text = line.strip().lower()
    if text in ("", "none", "n", "0"):
        return []
    if text in ("all", "a", "*"):
        return list(range(size))
    picked: set[int] = set()
    for part in text.replace(",", " ").split():
        if "-" in part:
            low, _, high = part.partition("-")
            if not (low.isdigit() and high.isdigit()):
                return None
            numbers = range(int(low), int(high) + 1)
        elif part.isdigit():
            numbers = range(int(part), int(part) + 1)
        else:
            return None
        for n in numbers:
            if not 1 <= n <= size:
                return None
            picked.add(n - 1)
    return sorted(picked)
