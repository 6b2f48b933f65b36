"""`brim memory review`: the review checklist in a terminal, one answer per page.

On each page the person names the items to accept; the rest of that page is rejected, so
nothing is rejected without having been on screen. Escape (or `q`, or the end of input)
leaves that page and every later one waiting. It reads plain lines, so it works the same on
a terminal and from a pipe.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.memory.plaintext import visible
from engine.memory.queue import Suggestion
from engine.memory.review import REVIEW_PAGE_SIZE, ReviewResult, parse_selection
from engine.memory.service import MemoryService

LEAVE_WORDS = frozenset({"q", "quit", "esc", "escape", "leave"})
PROMPT = (
    "Accept which? Numbers (e.g. 1 3), 'all' or 'none'/Enter; the rest of this page is "
    "rejected. Esc or q leaves this page and later ones waiting. > "
)


def _leaves(line: str) -> bool:
    return line.startswith("\x1b") or line.strip().lower() in LEAVE_WORDS


def run_review(
    service: MemoryService,
    *,
    read_line: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
    page_size: int = REVIEW_PAGE_SIZE,
) -> ReviewResult:
    result = ReviewResult()
    items: list[Suggestion] = service.pending()
    if not items:
        write("No memory suggestions are waiting.")
        return result
    pages = [items[i : i + page_size] for i in range(0, len(items), page_size)]
    for number, page in enumerate(pages, 1):
        write(f"Memory suggestions, page {number} of {len(pages)}:")
        for i, item in enumerate(page, 1):
            write(visible(f"  [{i}] {item.id}  {item.describe()}"))
        chosen: list[int] | None = None
        while chosen is None:
            try:
                line = read_line(PROMPT)
            except (EOFError, KeyboardInterrupt):
                line = "\x1b"
            if _leaves(line):
                result.left_waiting = sum(len(p) for p in pages[number - 1 :])
                write(f"Left {result.left_waiting} suggestions waiting.")
                return result
            chosen = parse_selection(line, len(page))
            if chosen is None:
                write(f"Not a selection: {line.strip()!r}. Use numbers from 1 to {len(page)}.")
        accept = [page[i].id for i in chosen]
        reject = [item.id for i, item in enumerate(page) if i not in chosen]
        for decision in service.accept(accept) if accept else []:
            if decision.ok:
                result.accepted.append(decision.id)
                write(f"  accepted {decision.id} -> {decision.path}")
            else:
                result.failed.append((decision.id, decision.message))
                write(f"  {decision.id} stays queued: {decision.message}")
        for decision in service.reject(reject) if reject else []:
            if decision.ok:
                result.rejected.append(decision.id)
    return result
