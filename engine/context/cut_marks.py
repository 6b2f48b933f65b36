"""The lines that say a text in the history was cut, and how to read the rest.

Two rooms cut text the model reads: a tool result too long for its budget is cut when it
first enters the history (engine/tools/shaping.py), and the fit rung cuts whatever still
does not fit the window (engine/context/fitting.py). Both end the cut text with the same
notice, so the model meets one wording, and the result store (engine/tools/result_store.py)
recognises one shape when it is asked to store a cut text over the whole one.
"""

from __future__ import annotations

import re

from engine.context.constants import RETRIEVE_TOOL

# How the line after a cut result begins.
CUT_NOTICE_PREFIX = "[Result cut: "

_OF_TOTAL = re.compile(r" of ([\d,]+)")
_TOTAL = re.compile(r"([\d,]+) characters")


def cut_notice(
    tool_name: str, kept: int, total: int, tool_call_id: str | None, stored: bool
) -> str:
    """The notice after a result cut to its first `kept` of `total` characters."""
    if stored and tool_call_id:
        return (
            f"{CUT_NOTICE_PREFIX}showing characters 0-{kept:,} of {total:,}. The whole result is "
            f'stored: call {RETRIEVE_TOOL} with tool_call_id "{tool_call_id}" and offset '
            f"{kept} to read the rest.]"
        )
    return (
        f"{CUT_NOTICE_PREFIX}showing {kept:,} of {total:,} characters. The rest could not be kept: "
        f"re-run {tool_name} with a narrower request (a smaller range, a more specific "
        f"pattern or path) to see it.]"
    )


def short_cut_notice(total: int, tool_call_id: str | None, stored: bool) -> str:
    """The shortest notice, for a result the window leaves almost no room for."""
    if stored and tool_call_id:
        return (
            f'{CUT_NOTICE_PREFIX}{total:,} characters, stored: {RETRIEVE_TOOL} "{tool_call_id}".]'
        )
    return f"{CUT_NOTICE_PREFIX}{total:,} characters, not kept: re-run the call to see it.]"


def split_cut_notice(text: str) -> tuple[str, int | None]:
    """A text without the cut notice on its last line, and the whole result's length that
    notice names (None when the text carries no cut notice)."""
    head, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith(CUT_NOTICE_PREFIX):
        return text, None
    found = _OF_TOTAL.search(last) or _TOTAL.search(last)
    total = int(found.group(1).replace(",", "")) if found else None
    return (head + "\n" if head else ""), total


def names_stored_whole(text: str, tool_call_id: str) -> bool:
    """True when `text` is a result cut at insertion whose whole text was stored under
    `tool_call_id` (its last line is the cut notice pointing at the store)."""
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    return last.startswith(CUT_NOTICE_PREFIX) and f'"{tool_call_id}"' in last
