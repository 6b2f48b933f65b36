"""The rail's fill timeline: its points and markers, and the timeline of a saved
conversation rebuilt from the store (engine/report/context_report.py builds the rest of the report).

A saved conversation's ladder acts are read from its saved notices: their meta carries
what the ladder did and its figures (`marker`, `notice_kind`, `messages_before` /
`messages_after` for a compaction, `messages_dropped` for a trim). Conversations saved
before the notices carried their figures have only the notice text: their figures are
read from the text, so an old database still draws its markers.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.messages import Message
from engine.report.figures import format_tokens
from engine.store.records import MessageRecord, UsageRecord

MARKER_CLEAR = "clear"
MARKER_COMPACTION = "compaction"
MARKER_TRIM = "trim"
MARKERS = (MARKER_CLEAR, MARKER_COMPACTION, MARKER_TRIM)


@dataclass(frozen=True)
class TimelinePoint:
    """One request that landed: how full it was and of which window."""

    request: int  # 1-based, over this report's conversation
    used: int
    window: int
    estimated: bool = False
    at: float = 0.0
    # What the engine's prompt cache served of it (None: the engine did not say, which is
    # not 0), out of `used`.
    cached: int | None = None

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.window if self.window else 0.0

    def cache_text(self) -> str:
        """Reused N of M, or "cache: not reported" where the engine did not say (not 0)."""
        if self.cached is None:
            return "cache: not reported"
        return f"reused {format_tokens(self.cached)} of {format_tokens(self.used)}"

    def row(self) -> str:
        """The timeline's row for this request: "request 7 · reused 1.2K of 1.3K"."""
        return f"request {self.request} · {self.cache_text()}"


@dataclass(frozen=True)
class TimelineMarker:
    """Something the ladder did between requests `after` and `after + 1`."""

    after: int  # requests landed before it
    kind: str  # clear | compaction | trim
    detail: str = ""
    ref: str = ""  # a compaction's id (its checkpoint's), which Show and restore name


# -- a saved conversation's timeline --------------------------------------------------------


@dataclass(frozen=True)
class SavedMark:
    """A ladder act found in the saved record: when it happened, and what it was."""

    at: float
    kind: str  # clear | compaction | trim
    detail: str = ""
    ref: str = ""  # a compaction's id, from its saved row


# The figures of a notice saved before notices carried them in meta.
_COMPACTED = re.compile(r"(\d+) -> (\d+) messages")
_TRIMMED = re.compile(r"(\d+) older messages?")


def _count(message: Message, key: str) -> int | None:
    value = message.meta_value(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mark_detail(message: Message, marker: str) -> str:
    """What a saved compaction or trim notice says it did: from its meta, else (an older
    saved conversation) from its text; "" when neither tells."""
    if marker == MARKER_COMPACTION:
        before, after = _count(message, "messages_before"), _count(message, "messages_after")
        if before is not None and after is not None:
            return f"{before} -> {after} messages"
        if found := _COMPACTED.search(message.content):
            return f"{found.group(1)} -> {found.group(2)} messages"
    elif marker == MARKER_TRIM:
        dropped = _count(message, "messages_dropped")
        if dropped is not None:
            return f"{dropped} messages"
        if found := _TRIMMED.search(message.content):
            return f"{found.group(1)} messages"
    return ""


def saved_marks(records: Sequence[MessageRecord]) -> list[SavedMark]:
    """The ladder's acts as the store kept them, oldest first.

    Compaction and trimming leave a notice row with its marker and figures (the session's
    context ledger, engine/session/ledger.py), timed by the notice. Clearing leaves no row:
    a tool result's stored copy gains meta `cleared` in the rewrite that cleared it, so the
    rewrite's time (when the uncleared copy was archived) dates it, and one rewrite is one
    marker."""
    marks: list[SavedMark] = []
    uncleared: dict[str, float] = {}  # tool result id -> when its uncleared copy was archived
    cleared_at: dict[float, int] = {}
    noticed: set[str] = set()
    for record in records:
        message = record.message
        marker = str(message.meta_value("marker", "") or "")
        if message.is_notice and marker in MARKERS:
            if message.id in noticed:
                continue  # the same notice, carried over by a later rewrite
            noticed.add(message.id)
            ref = str(message.meta_value("compaction", "") or "")
            marks.append(SavedMark(message.created, marker, mark_detail(message, marker), ref))
        elif message.role == "tool":
            if not message.meta_value("cleared"):
                if record.archived_at is not None:
                    uncleared[message.id] = record.archived_at
            elif message.id in uncleared:
                at = uncleared.pop(message.id)
                cleared_at[at] = cleared_at.get(at, 0) + 1
    marks.extend(SavedMark(at, MARKER_CLEAR, f"{n} tool results") for at, n in cleared_at.items())
    marks.sort(key=lambda mark: mark.at)
    return marks


def saved_timeline(
    requests: Sequence[UsageRecord], marks: Sequence[SavedMark], window: int
) -> tuple[list[TimelinePoint], list[TimelineMarker]]:
    """A saved conversation's timeline: one point per chat request in the order they landed,
    each ladder act placed after the requests that landed before it.

    The usage rows do not say which window a request was sent to, so every point is drawn
    against `window`, the one Brim accounts against now (the current marks are drawn against
    it too). A request whose engine reported no prompt count keeps its number but has no
    point: the estimate the live chart used for it was never stored."""
    points = [
        TimelinePoint(index, row.prompt_tokens, window, at=row.created, cached=row.cached_tokens)
        for index, row in enumerate(requests, start=1)
        if row.prompt_tokens is not None
    ]
    landed = [row.created for row in requests]
    markers = [
        TimelineMarker(bisect.bisect_left(landed, mark.at), mark.kind, mark.detail, mark.ref)
        for mark in marks
    ]
    return points, markers
