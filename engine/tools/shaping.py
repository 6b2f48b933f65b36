"""Tool results shaped for a model reader before they enter the history.

Tool output is the largest single lever on context in a long run. Every result is cleaned
of what only a terminal needs (colour codes, progress bars redrawn with carriage returns,
stray control bytes) and held to a budget: a result too long for it is cut when it is first
added, at a line boundary where one is near, and a line after the cut says how to read the
rest: `retrieve_tool_result` with the call's id and the offset to continue from, because
the whole result was stored first. When it could not be stored, the line says to re-run
the tool with a narrower request instead. Sizes are recorded per tool name, so the context
rail can show which tool is eating the window (usually one, and usually a surprise).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from engine.context.cut_marks import cut_notice

StoreResult = Callable[[str, str], bool]  # (tool_call_id, text) -> stored?

# A result this long (about 4K tokens) is cut unless the loop passes its own budget.
DEFAULT_RESULT_BUDGET_CHARS = 16_000
# A cut backs up to the last line break when one lies within this share of the kept head.
LINE_BREAK_SLACK = 0.2

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _as_terminal_shows(line: str) -> str:
    """A line redrawn with carriage returns (a progress bar) reads as its last drawing."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


def clean_text(raw: str) -> str:
    """The text a person would have seen: no escape codes, no redrawn lines, no stray
    control bytes; tabs, line breaks and trailing spaces kept (an edit must match them)."""
    text = _ANSI.sub("", raw)
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_as_terminal_shows(line) for line in text.split("\n"))
    return _CONTROL.sub("", text)


def _cut_point(text: str, room: int) -> int:
    room = max(0, min(room, len(text)))
    newline = text.rfind("\n", 0, room)
    if newline >= 0 and newline + 1 >= room * (1 - LINE_BREAK_SLACK):
        return newline + 1
    return room


def _chars_within(
    text: str, budget_chars: int, budget_tokens: int, count_tokens: Callable[[str], int]
) -> int:
    """The longest character budget (at most `budget_chars`) whose head of `text` fits
    `budget_tokens` tokens, found by bisection (a dozen counts of at most the head)."""
    low, high = 0, min(budget_chars, len(text))
    if count_tokens(text[:high]) <= budget_tokens:
        return budget_chars
    while high - low > 16:
        middle = (low + high) // 2
        if count_tokens(text[:middle]) <= budget_tokens:
            low = middle
        else:
            high = middle
    return low


def shape_result(
    tool_name: str,
    raw: str,
    budget_chars: int,
    *,
    tool_call_id: str | None = None,
    store: StoreResult | None = None,
    budget_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> tuple[str, bool]:
    """The result as it enters the history, and whether it was cut.

    With `budget_tokens` and `count_tokens` the result must also fit that many tokens: the
    character budget is a guess at it, and text dense in digits, JSON or code runs more
    tokens per character than prose, so such a result is cut shorter.

    A cut result is stored whole (cleaned, so offsets match what the model saw) before it
    is cut; the notice after it names `retrieve_tool_result`, the call id and the offset to
    continue from. The content stays within `budget_chars` unless the budget is smaller
    than the notice itself."""
    text = clean_text(raw)
    if len(text) <= budget_chars and (
        budget_tokens is None or count_tokens is None or count_tokens(text) <= budget_tokens
    ):
        return text, False
    if budget_tokens is not None and count_tokens is not None:
        budget_chars = _chars_within(text, budget_chars, budget_tokens, count_tokens)
    stored = False
    if store is not None and tool_call_id:
        try:
            stored = bool(store(tool_call_id, text))
        except Exception:  # a store that raises is a store that failed; the run goes on
            stored = False
    # The notice's length depends on the cut point only through its digits: size it for the
    # longest it can be.
    longest = cut_notice(tool_name, len(text), len(text), tool_call_id, stored)
    kept = _cut_point(text, budget_chars - len(longest) - 1)
    notice = cut_notice(tool_name, kept, len(text), tool_call_id, stored)
    head = text[:kept]
    return (head if head.endswith("\n") or not head else head + "\n") + notice, True


class ToolMetrics:
    """Characters each tool returned in one run or conversation, for the context rail."""

    def __init__(self) -> None:
        self._chars: dict[str, int] = {}
        self._calls: dict[str, int] = {}

    def record(self, name: str, chars: int) -> None:
        self._chars[name] = self._chars.get(name, 0) + max(0, chars)
        self._calls[name] = self._calls.get(name, 0) + 1

    def by_tool(self) -> list[tuple[str, int]]:
        """(tool name, characters returned), largest first; ties by name."""
        return sorted(self._chars.items(), key=lambda item: (-item[1], item[0]))

    def calls(self, name: str) -> int:
        return self._calls.get(name, 0)

    def total(self) -> int:
        return sum(self._chars.values())
