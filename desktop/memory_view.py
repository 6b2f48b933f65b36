"""How memory reads on screen, shared by the review panel, the review dialog and the browser.

Memory work (reading the queue, accepting, forgetting) is file I/O under a lock that another
process may hold, so none of it runs on the GUI thread: every view is handed a `Runner`
(`EngineBridge.call`) that runs a function on the engine thread and delivers its result back
on the GUI thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from engine.api import (
    MemoryService,
    MemoryStoreError,
    Suggestion,
    visible,
)

# run(fn, on_result, on_error) -> whether it was scheduled (EngineBridge.call).
Runner = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[str], None] | None], bool]

_MESSAGE_REF = re.compile(r"conversation\s+(\S+)\s+message\s+(\S+)")
_PROJECT_DIGEST = re.compile(r"-[0-9a-f]{8}$")


def kind_label(suggestion: Suggestion) -> str:
    """`fact`, `fact · amend`, `lesson · rewrite`, `revision · delete`."""
    if suggestion.action in ("create", ""):
        return suggestion.kind
    return f"{suggestion.kind} · {suggestion.action}"


def scope_label(service: MemoryService | None, key: str) -> str:
    """What a person reads for a scope key: `global`, `project brim-1a2b`, `agent coder`."""
    if service is None:
        return key
    try:
        scope = service.layout.scope_for_key(key)
    except MemoryStoreError:
        return key
    if scope.kind == "project":  # the folder's name, without the path digest that keys it
        return "project " + _PROJECT_DIGEST.sub("", key.rsplit("/", 1)[-1])
    return scope.label


def proposed_text(suggestion: Suggestion) -> str:
    """The words that would be written (a deletion has none: its reason stands in), with
    any control or invisible character shown (␛, <U+202E>) rather than obeyed."""
    if suggestion.kind == "revision" and suggestion.action == "delete":
        reason = suggestion.reason or "no reason given"
        return visible(f"Delete {suggestion.path}: {reason}")
    return visible(suggestion.statement or suggestion.reason)


def whose_words(suggestion: Suggestion) -> str:
    """Who wrote the text: a lesson or revision is the agent's own, never the user's."""
    if suggestion.author == "user":
        return ""
    return "The agent's own words, not yours"


def message_ref(suggestion: Suggestion) -> tuple[str, str]:
    """The conversation and message the quote came from ("" when it does not say)."""
    match = _MESSAGE_REF.search(suggestion.source or "")
    if match:
        return match.group(1), match.group(2)
    return suggestion.conversation, ""


def flat(text: str, limit: int = 0) -> str:
    """One line, at most `limit` characters (0: no limit); control characters shown."""
    line = " ".join(visible(text).split())
    if limit and len(line) > limit:
        return line[: limit - 1] + "…"
    return line


def when(stamp: object) -> str:
    """A receipt's time as local date and time; "-" when it has none."""
    try:
        seconds = float(stamp)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def waiting_text(count: int) -> str:
    noun = "suggestion" if count == 1 else "suggestions"
    return f"{count} memory {noun} waiting"
