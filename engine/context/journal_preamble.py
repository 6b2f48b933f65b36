"""The journal folded back into a resumed conversation, only where it adds something.

A resumed conversation's history usually still carries its live checkpoint, and that
checkpoint was merged from every earlier one: the journal's records then say again what the
request already holds, at a few hundred tokens on a small window. So a record is shown only
for what the live checkpoints do not carry: entries of what was done, decided, required or
read that a cap left out. What a newer checkpoint supersedes is never brought back: the goal,
the work in progress, the next steps, and above all the user's statements, which Brim
carries mechanically (a correction or a "forget that" must not come back from an old record).
A record older than the live checkpoint's own is not shown at all (`records_to_show`): that
checkpoint was merged from it, and what it left out for room the request did not have before
the conversation was left either, so a reopened conversation sends what it sent. With no live
checkpoint (every compaction undone, or none in the history) the records are
shown whole. Nothing added: no preamble at all.

The records are shown as the checkpoint's face (engine/context/model_face.py), worded for
whether the request carries tools: a model without them is asked to read nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from engine.context.checkpoint import (
    checkpoint_entries,
    covered_items,
    item_key,
    render_checkpoint,
    render_covered,
)
from engine.context.constants import (
    COVERED_SECTION,
    JOURNAL_PREAMBLE_TOKENS,
)
from engine.context.model_face import face_lines

CountText = Callable[[str], int]

# Every preamble starts with the head (how a resumed history finds one it already has).
PREAMBLE_HEAD = "Journal of earlier work in this conversation, recorded at each compaction."
PREAMBLE_VERIFY = (
    " These are claims written mid-task and often optimistic about what was finished: verify "
    "them (read the files, re-run the checks) before relying on them."
)
# A model without tools can check nothing itself.
PREAMBLE_CLAIMS = (
    " These are claims written mid-task and often optimistic about what was finished: treat "
    "them as claims, not as facts."
)
# What a record may add beside a live checkpoint: the sections every checkpoint carries
# forward from the ones before it (engine/context/checkpoint.py `carry_forward`, and Covered
# So Far), which only a cap leaves out. The rest (the goal, the work in
# progress, the next steps, what to keep in mind) is what the newer checkpoint superseded,
# and the user's statements are Brim's own carry, corrections and retractions applied.
ADDS_TO_LIVE = ("Constraints & Preferences", "Done", "Key Decisions", COVERED_SECTION)


def _approx_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _key(entry: str) -> str:
    return " ".join(entry.split()).strip(" .;").lower()


class Carried:
    """What the live checkpoints of a history already carry, entry by entry."""

    def __init__(self, checkpoints: Sequence[str]) -> None:
        self.any = bool(checkpoints)
        self.entries: set[str] = set()
        self.covered: set[str] = set()
        for checkpoint in checkpoints:
            for title, entries in checkpoint_entries(checkpoint).items():
                if title != COVERED_SECTION:
                    self.entries.update(_key(e) for e in entries)
            self.covered.update(item_key(i) for i in covered_items(checkpoint))

    def left_out(self, record: str) -> str:
        """The part of a stored checkpoint `record` these checkpoints do not carry, as a
        stored checkpoint ("" when they carry all of it)."""
        if not self.any:
            return record
        sections: dict[str, list[str]] = {}
        for title, entries in checkpoint_entries(record).items():
            if title not in ADDS_TO_LIVE:
                continue
            if title == COVERED_SECTION:
                items = [i for i in covered_items(record) if item_key(i) not in self.covered]
                if items:
                    sections[title] = render_covered(items)
                continue
            fresh = [e for e in entries if _key(e) not in self.entries]
            if fresh:
                sections[title] = [f"- {e}" for e in fresh]
        return render_checkpoint(sections)

    def holds_text(self, text: str) -> bool:
        """A record that is no checkpoint (an older Brim's), said whole by one of them."""
        return self.any and _key(text) in self.entries


def records_to_show(
    entries: Sequence[Mapping[str, Any]], live: Set[str], restored: Set[str]
) -> list[Mapping[str, Any]]:
    """The journal records a resumed history does not already hold: none up to the newest
    record of a checkpoint the history still carries (`live` summary ids), since that
    checkpoint was merged from every one before it (what it lacks of them it left out for
    room, and the request had not had it before the conversation was left either); and
    none of a compaction the user restored (`restored`). Records that name no checkpoint
    (an older Brim's) stay, for `journal_preamble` to weigh entry by entry."""
    newest_live = max((i for i, e in enumerate(entries) if e.get("checkpoint") in live), default=-1)
    return [e for e in entries[newest_live + 1 :] if e.get("checkpoint") not in restored]


def _record_text(entry: Mapping[str, Any], carried: Carried, tools: bool) -> str:
    """One record as the model is shown it: what it adds to the live checkpoints."""
    stored = str(entry.get("summary") or "").strip()
    if stored and checkpoint_entries(stored):
        left = carried.left_out(stored)
        return "\n".join(face_lines(left, tools=tools)) if left else ""
    text = (stored or str(entry.get("shown") or "")).strip()
    return "" if not text or carried.holds_text(text) else text


def journal_preamble(
    entries: Sequence[Mapping[str, Any]],
    budget_tokens: int = JOURNAL_PREAMBLE_TOKENS,
    count_text: CountText | None = None,
    *,
    live_checkpoints: Sequence[str] = (),
    tools: bool = True,
) -> str:
    """The journal folded back in on resume, bounded to `budget_tokens`: for each record
    what `live_checkpoints` (the stored checkpoints the history still carries) do not, the
    newest first (they say where the task is), shown oldest to newest; the newest is cut to
    fit when it alone is too long. Empty when nothing is left to add or nothing fits.
    `tools`: whether the request carries tools (the head asks for checks only then)."""
    count = count_text or _approx_tokens
    carried = Carried(live_checkpoints)
    texts = [t for t in (_record_text(e, carried, tools) for e in entries) if t]
    if not texts:
        return ""
    head = PREAMBLE_HEAD + (PREAMBLE_VERIFY if tools else PREAMBLE_CLAIMS)
    room = budget_tokens - count(head) - 8
    chosen: list[str] = []
    for text in reversed(texts):
        block = f"--- record {len(texts) - len(chosen)} of {len(texts)} ---\n{text}"
        cost = count(block)
        if cost <= room:
            chosen.append(block)
            room -= cost
            continue
        if not chosen and room > 0:
            # Cut the newest record to the room left (characters scale roughly with tokens).
            keep = int(len(block) * room / max(cost, 1))
            while keep > 0 and count(block[:keep].rstrip() + " …") > room:
                keep = keep * 9 // 10
            if keep > 0:
                chosen.append(block[:keep].rstrip() + " …")
        break
    if not chosen:
        return ""  # no record fits: the head alone would say nothing
    return head + "\n\n" + "\n\n".join(reversed(chosen))
