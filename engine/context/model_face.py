"""The checkpoint as the agent's model is shown it: plain context in the second person.

The stored checkpoint is a markdown document of headings (for the merge, the timeline and
the summarizer). Shown to a small model as it is, inside its one system message, it is a
document to continue: after a compaction the model answered "[The user is asking about 12
times 12 …]" and wrote the checkpoint's own "**Done** • (none)". So what the model is sent is
rendered from the stored form for that purpose: short statements addressed to it ("Earlier
in this conversation you and the user …", "The user told you: …"), no headings, no
placeholders, no bracketed summary voice, the user's own words in quotes. The summary
message carries this text, so every count and budget counts what is sent.

Its frame is said in the conversation's language (engine/context/frame_words.py), read from
the user's own words the checkpoint quotes (their statements, their first request), else
from the checkpoint's own entries: a German conversation's checkpoint opens "Frühere
Nachrichten zwischen dir und dem Nutzer …", and no English line invites an English answer.
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
from engine.context.frame_words import frame_word, language_of, opens_with_quote, quoted_text
from engine.messages import Message

OPENING = frame_word("opening")
# The opening of a checkpoint placed after kept messages, before the current request.
OPENING_AFTER = frame_word("opening_after")
CLOSING = frame_word("closing")
# After kept messages, only the user's current message follows the checkpoint.
CLOSING_AFTER = frame_word("closing_after")
# (section, the frames.toml key of how the model is told it); each section's entries join
# into one line.
LINES: tuple[tuple[str, str], ...] = (
    ("Goal", "goal"),
    ("Constraints & Preferences", "constraints"),
    ("Progress", "progress"),
    ("Done", "done"),
    ("In Progress", "in_progress"),
    ("Blocked", "blocked"),
    ("Key Decisions", "decided"),
    ("Next Steps", "next"),
    ("Critical Context", "critical"),
)
STATED_LINE = frame_word("stated")
STORED_LINE = frame_word("stored")
COVERED_LINE = frame_word("covered")
# Without tools the model can read nothing: what it did is said, no reading is asked of it.
COVERED_LINE_NO_TOOLS = frame_word("covered_no_tools")
STORED_PROGRESS_LINE = frame_word("stored_progress")

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


def checkpoint_language(checkpoint: str) -> str:
    """The language of the conversation a checkpoint stands for: that of the user's own
    words it quotes, else of its entries."""
    entries = checkpoint_entries(checkpoint)
    quoted = [q for q in map(quoted_text, entries.get("Goal", [])) if q is not None]
    own = [*entries.get(STATED_SECTION, []), *quoted]
    if own:
        return language_of(own)
    return language_of(e for title, es in entries.items() if title != COVERED_SECTION for e in es)


def face_lines(checkpoint: str, *, tools: bool = True, language: str = "en") -> list[str]:
    """The lines a stored checkpoint is shown as, without the opening and the closing, in
    `language`. Without `tools` (the request carries none) the lines that point at a stored
    file to read with `retrieve_tool_result` are left out: the model could not follow them."""
    entries = checkpoint_entries(checkpoint)
    lines: list[str] = []
    goal = _joined(entries.get("Goal", []))
    if goal:
        # "The user wants: The user asked about …" reads as the summarizer's voice again.
        # A quoted request a cap cut is still the user's words, not a wish to frame.
        quotes = any(opens_with_quote(e.removeprefix("- ")) for e in entries["Goal"])
        own = goal.lower().startswith(("the user", "user ")) or quotes
        lines.append(goal if own else frame_word("goal", language).format(goal))
    stated = entries.get(STATED_SECTION, [])
    if stated:
        lines.append(frame_word("stated", language))
        lines.extend(_quoted(s) for s in stated)
    if tools:
        for ref in entries.get(STORED_STATEMENTS_SECTION, []):
            lines.append(frame_word("stored", language).format(ref.strip("`")))
    covered = covered_items(checkpoint) if COVERED_SECTION in entries else []
    if covered:
        grouped = [line.removeprefix("- ") for line in render_covered(covered)]
        key = "covered" if tools else "covered_no_tools"
        lines.append(frame_word(key, language).format("; ".join(grouped)))
    if tools:
        for ref in entries.get(STORED_PROGRESS_SECTION, []):
            lines.append(frame_word("stored_progress", language).format(ref.strip("`")))
    for title, key in LINES[1:]:
        text = _joined(entries.get(title, []))
        if text:
            lines.append(frame_word(key, language).format(text))
    return lines


def render_for_model(checkpoint: str, *, after: bool = False, tools: bool = True) -> str:
    """What the agent's model is shown for a stored checkpoint ("" when it holds nothing);
    `after`: the checkpoint follows kept messages of the conversation, instead of leading
    it; `tools`: whether the request carries tools (see `face_lines`)."""
    language = checkpoint_language(checkpoint)
    lines = face_lines(checkpoint, tools=tools, language=language)
    if not lines:
        return ""
    if after:
        opening, closing = (
            frame_word("opening_after", language),
            frame_word("closing_after", language),
        )
    else:
        opening, closing = frame_word("opening", language), frame_word("closing", language)
    return "\n".join([opening, *lines, closing])


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
