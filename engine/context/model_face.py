"""The checkpoint as the agent's model is shown it: plain context in the second person.

The stored checkpoint is a markdown document of headings (for the merge, the timeline and
the summarizer). Shown to a small model as it is, inside its one system message, it is a
document to continue: after a compaction the model answered "[The user is asking about 12
times 12 …]" and wrote the checkpoint's own "**Done** • (none)". So what the model is sent is
rendered from the stored form for that purpose: short statements addressed to it ("Earlier
in this conversation you and the user …", "The user told you: …"), no headings, no
placeholders, no bracketed summary voice, the user's own words in quotes. The summary
message carries this text, so every count and budget counts what is sent.
"""

from __future__ import annotations

import re

from engine.context.checkpoint import (
    CHECKPOINT_META,
    checkpoint_entries,
    covered_items,
    render_covered,
)
from engine.context.constants import (
    COVERED_SECTION,
    STATED_SECTION,
    STORED_PROGRESS_SECTION,
    STORED_STATEMENTS_SECTION,
    SUMMARY_ROLE,
)
from engine.messages import Message

OPENING = (
    "Earlier in this conversation you and the user exchanged messages no longer shown here. "
    "From them:"
)
# The opening of a checkpoint placed after kept messages, before the current request.
OPENING_AFTER = (
    "Before the messages above, you and the user exchanged messages no longer shown here. "
    "From them:"
)
CLOSING = "The latest messages follow. Continue from them and answer the user directly."
# After kept messages, only the user's current message follows the checkpoint.
CLOSING_AFTER = "The user's latest message follows. Answer the user directly."
# (section, how the model is told it); each section's entries join into one line.
LINES: tuple[tuple[str, str], ...] = (
    ("Goal", "The user wants: {}"),
    ("Constraints & Preferences", "Keep to what the user asked: {}"),
    ("Progress", "Progress so far: {}"),
    ("Done", "Already done: {}"),
    ("In Progress", "You were working on: {}"),
    ("Blocked", "Still blocked: {}"),
    ("Key Decisions", "Decided: {}"),
    ("Next Steps", "Next: {}"),
    ("Critical Context", "Also keep in mind: {}"),
)
STATED_LINE = "The user told you:"
STORED_LINE = (
    "More of what the user told you earlier is stored: read it with retrieve_tool_result, "
    'tool_call_id "{}".'
)
COVERED_LINE = "You already read or looked at: {} (no need to read them again)."
# Without tools the model can read nothing: what it did is said, no reading is asked of it.
COVERED_LINE_NO_TOOLS = "You already read or looked at: {}."
STORED_PROGRESS_LINE = (
    "More of what you already did and read is stored: read it with retrieve_tool_result, "
    'tool_call_id "{}", before you redo any of it.'
)

_MARKUP = re.compile(r"^\s*(?:#+\s*|[-*+•]\s+|\d+[.)]\s+|>\s*)+")
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)")
_BRACKETED = re.compile(r"^\[(?P<inner>[^\[\]]*)\]$")
_ASKING = re.compile(r"\b(?P<the>[Tt]he) user is asking\b")


def _clean(entry: str) -> str:
    """One entry as a plain clause: list marks, emphasis and a bracket around it removed,
    the summary voice's "the user is asking" put in the past."""
    text = _EMPHASIS.sub("", _MARKUP.sub("", entry)).strip()
    bracketed = _BRACKETED.match(text)
    if bracketed:
        text = bracketed.group("inner").strip()
    text = _ASKING.sub(lambda m: f"{m.group('the')} user asked", text)
    return " ".join(text.split())


def _joined(entries: list[str]) -> str:
    parts = [p for p in (_clean(e) for e in entries) if p]
    text = "; ".join(p.rstrip(".;") for p in parts)
    return text + "." if text and text[-1] not in ".!?…" else text


def _quoted(statement: str) -> str:
    text = " ".join(statement.split())
    return f"\u201c{text}\u201d"


def face_lines(checkpoint: str, *, tools: bool = True) -> list[str]:
    """The lines a stored checkpoint is shown as, without the opening and the closing.
    Without `tools` (the request carries none) the lines that point at a stored file to
    read with `retrieve_tool_result` are left out: the model could not follow them."""
    entries = checkpoint_entries(checkpoint)
    lines: list[str] = []
    goal = _joined(entries.get("Goal", []))
    if goal:
        # "The user wants: The user asked about …" reads as the summarizer's voice again.
        lines.append(
            goal if goal.lower().startswith(("the user", "user ")) else LINES[0][1].format(goal)
        )
    stated = entries.get(STATED_SECTION, [])
    if stated:
        lines.append(STATED_LINE)
        lines.extend(_quoted(s) for s in stated)
    if tools:
        for ref in entries.get(STORED_STATEMENTS_SECTION, []):
            lines.append(STORED_LINE.format(ref.strip("`")))
    covered = covered_items(checkpoint) if COVERED_SECTION in entries else []
    if covered:
        grouped = [line.removeprefix("- ") for line in render_covered(covered)]
        lines.append((COVERED_LINE if tools else COVERED_LINE_NO_TOOLS).format("; ".join(grouped)))
    if tools:
        for ref in entries.get(STORED_PROGRESS_SECTION, []):
            lines.append(STORED_PROGRESS_LINE.format(ref.strip("`")))
    for title, template in LINES[1:]:
        text = _joined(entries.get(title, []))
        if text:
            lines.append(template.format(text))
    return lines


def render_for_model(checkpoint: str, *, after: bool = False, tools: bool = True) -> str:
    """What the agent's model is shown for a stored checkpoint ("" when it holds nothing);
    `after`: the checkpoint follows kept messages of the conversation, instead of leading
    it; `tools`: whether the request carries tools (see `face_lines`)."""
    lines = face_lines(checkpoint, tools=tools)
    if not lines:
        return ""
    if after:
        return "\n".join([OPENING_AFTER, *lines, CLOSING_AFTER])
    return "\n".join([OPENING, *lines, CLOSING])


def summary_message(checkpoint: str, *, after: bool = False, tools: bool = True) -> Message:
    """The history's summary message: the model's face as its content (what is sent and
    counted), the stored checkpoint beside it for the next merge; `after` and `tools` as
    in `render_for_model`."""
    return Message(
        role=SUMMARY_ROLE,
        content=render_for_model(checkpoint, after=after, tools=tools),
        kind="summary",
        meta=((CHECKPOINT_META, checkpoint),),
    )
