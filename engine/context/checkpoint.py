"""The fixed checkpoint a compaction writes, read and merged mechanically.

Small local models drift from any format they are asked for, so the summary is parsed back
into the schema (missing sections filled, sections put in order) rather than trusted as
written. "Covered So Far" is the anti-repetition record: a pass that forgets which files it
already read restarts the pass. So its merge is not left to the model: every entry of the
prior checkpoint and every path the summarized messages read is carried into the new one.
The task itself gets the same protection (`carry_forward`): the earlier checkpoint's Goal,
Constraints, Done and Key Decisions survive a summarizer that forgot them, and the whole
checkpoint is held to a token budget (`cap_checkpoint`) so a summary never crowds out the
conversation it stands for.

An empty section is left out, never written as "(none)": on a small window a cap that kept
the headings and dropped their entries sent the model a skeleton of headings and nothing
else. This is the stored form (the merge, the timeline, the summarizer read it); what the
agent's model is shown is rendered from it (engine/context/model_face.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from engine.context.constants import CHECKPOINT_SCHEMA, COVERED_SECTION
from engine.messages import Message

SUMMARY_PREFIX = (
    "[Checkpoint: a summary of the earlier part of this conversation, "
    "written when older messages were compacted]"
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(?P<t>.+?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s*\*\*(?P<t>[^*]+?)\*\*\s*:?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# The line an older Brim's cap left where it dropped entries: not an entry itself.
_CAP_NOTE = re.compile(r"^\s*(?:-\s*)?\(\d+ earlier entr(?:y|ies) left out")
_TITLES = {title.lower(): title for _, title in CHECKPOINT_SCHEMA}
_SUBSECTIONS = ("Done", "In Progress", "Blocked")


def _canonical_title(raw: str) -> str | None:
    t = raw.strip().strip("*_:").strip().lower()
    t = re.sub(r"\s+and\s+", " & ", t)
    t = re.sub(r"\s+", " ", t)
    return _TITLES.get(t)


def _heading_title(line: str) -> str | None:
    match = _HEADING.match(line) or _BOLD_HEADING.match(line)
    return _canonical_title(match.group("t")) if match else None


def parse_checkpoint(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """(lines before the first known heading, {canonical title: body lines})."""
    preamble: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] = preamble
    for line in text.splitlines():
        title = _heading_title(line)
        if title is not None:
            current = sections.setdefault(title, [])
            continue
        current.append(line.rstrip())
    return preamble, sections


def _strip_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _is_empty_marker(line: str) -> bool:
    return _BULLET.sub("", line).strip().strip("()_*.").lower() in {"", "none", "n/a", "nothing"}


def _body(lines: list[str]) -> list[str]:
    kept = [
        ln for ln in lines if not (ln.strip() and (_is_empty_marker(ln) or _CAP_NOTE.match(ln)))
    ]
    return _strip_blank(kept)


def render_checkpoint(sections: dict[str, list[str]]) -> str:
    """The schema in order, the sections that have entries only: an empty one is left out,
    and Progress is there when one of its three subsections is. Empty when all are."""
    bodies = {title: _body(sections.get(title, [])) for _, title in CHECKPOINT_SCHEMA}
    out: list[str] = []
    for level, title in CHECKPOINT_SCHEMA:
        if title == "Progress" and not bodies[title]:
            if any(bodies[sub] for sub in _SUBSECTIONS):
                out.extend([f"{'#' * level} {title}", ""])
            continue
        if bodies[title]:
            out.extend([f"{'#' * level} {title}", *bodies[title], ""])
    return "\n".join(out).rstrip() + "\n" if out else ""


def checkpoint_entries(checkpoint: str) -> dict[str, list[str]]:
    """Each section's entries, bullets and markers removed (empty sections absent)."""
    _, sections = parse_checkpoint(checkpoint)
    out = {}
    for title, lines in sections.items():
        entries = [_BULLET.sub("", ln).strip() for ln in _entries(lines)]
        if entries:
            out[title] = entries
    return out


def summarizer_words(text: str) -> str:
    """What a summarizer wrote, its headings, bullets and "(none)" markers left out: the
    text the checks of engine/context/summary_checks.py read."""
    kept = []
    for line in text.splitlines():
        if _heading_title(line) is not None or not line.strip() or _is_empty_marker(line):
            continue
        kept.append(_BULLET.sub("", line).strip())
    return "\n".join(kept)


def normalize_checkpoint(text: str) -> str:
    """Put a summarizer's answer into the fixed schema. Text outside any known section
    (or a free-form answer with no headings at all) is kept under Critical Context."""
    preamble, sections = parse_checkpoint(text)
    stray = _strip_blank(preamble)
    if stray:
        sections.setdefault("Critical Context", [])
        sections["Critical Context"] = [*sections["Critical Context"], *stray]
    return render_checkpoint(sections)


# A long pass covers hundreds of files; written one full path per line, the list alone can
# outgrow a small window. So the files of one folder, from GROUP_AT on, share a line that
# still names each exactly: "in `src/api/`: `a.py`, `b.py`, `c.py`". Reading expands it.
GROUP_AT = 3
_GROUP = re.compile(r"^in `(?P<folder>[^`]*/)`\s*:\s*(?P<names>.+)$")
_BARE_PATH = re.compile(r"`(?P<path>[^`]*/[^`/]+)`")


def _expand(item: str) -> list[str]:
    """One entry as read, a folder line expanded into one entry per file."""
    match = _GROUP.match(item)
    if match is None:
        return [item]
    names = re.findall(r"`([^`/]+)`", match.group("names"))
    if not names:
        return [item]
    return [f"`{match.group('folder')}{name}`" for name in names]


def render_covered(items: list[str]) -> list[str]:
    """The section's lines: entries in order, a folder's bare file paths on one line once
    there are GROUP_AT of them (the line sits where the folder's first file was)."""
    folders: dict[str, list[str]] = {}
    for item in items:
        bare = _BARE_PATH.fullmatch(item)
        if bare is not None:
            folder, name = bare.group("path").rsplit("/", 1)
            folders.setdefault(folder + "/", []).append(name)
    lines: list[str] = []
    written: set[str] = set()
    for item in items:
        bare = _BARE_PATH.fullmatch(item)
        folder = bare.group("path").rsplit("/", 1)[0] + "/" if bare is not None else ""
        if bare is None or len(folders[folder]) < GROUP_AT:
            lines.append(f"- {item}")
        elif folder not in written:
            written.add(folder)
            names = ", ".join(f"`{name}`" for name in folders[folder])
            lines.append(f"- in `{folder}`: {names}")
    return lines


def covered_items(checkpoint: str) -> list[str]:
    """The entries of Covered So Far, bullets removed, a folder line read as its files."""
    _, sections = parse_checkpoint(checkpoint)
    items = []
    for line in sections.get(COVERED_SECTION, []):
        if not line.strip() or _is_empty_marker(line) or _CAP_NOTE.match(line):
            continue
        items.extend(_expand(_BULLET.sub("", line).strip()))
    return items


def item_key(item: str) -> str:
    """What makes two Covered So Far entries the same source: the backticked path, or the
    first word when it looks like a path, else the whole entry (case-insensitive)."""
    ticked = re.search(r"`([^`]+)`", item)
    if ticked:
        return ticked.group(1).strip().lower()
    first = item.split()[0].strip(",;:()\"'") if item.split() else ""
    if first and ("/" in first or "." in first.strip(".") or " " not in item.strip()):
        return first.lower()
    return item.strip().lower()


def covered_keys(checkpoint: str) -> set[str]:
    return {item_key(i) for i in covered_items(checkpoint)}


def merge_covered(checkpoint: str, priors: Iterable[str], paths: Iterable[str]) -> str:
    """Make Covered So Far cumulative: keep the new entries, then add every prior entry and
    every path read in the summarized messages that the new checkpoint left out."""
    _, sections = parse_checkpoint(checkpoint)
    items = covered_items(checkpoint)
    keys = {item_key(i) for i in items}
    for prior in priors:
        for item in covered_items(prior):
            if item_key(item) not in keys:
                items.append(item)
                keys.add(item_key(item))
    for path in paths:
        if path and item_key(f"`{path}`") not in keys:
            items.append(f"`{path}`")
            keys.add(item_key(f"`{path}`"))
    sections[COVERED_SECTION] = render_covered(items)
    return render_checkpoint(sections)


def summary_content(checkpoint: str) -> str:
    """The summary message an older Brim sent: the stored form itself, under a prefix line.
    Kept so such messages still read back (`checkpoint_of`)."""
    return f"{SUMMARY_PREFIX}\n\n{checkpoint.strip()}\n"


# The summary message's meta key for the stored checkpoint (its content is what the model
# is shown, engine/context/model_face.py).
CHECKPOINT_META = "checkpoint"


def stored_checkpoint(message: Message) -> str:
    """The stored checkpoint of a summary message, also of one an older Brim saved."""
    stored = message.meta_value(CHECKPOINT_META)
    return str(stored).strip() if stored else checkpoint_of(message.content)


def checkpoint_of(summary_message_content: str) -> str:
    """The checkpoint inside a summary message (the prefix line removed)."""
    text = summary_message_content
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX) :]
    return text.strip()


# Sections a later checkpoint may not lose: the task, its rules, what is finished and why.
# Each prior entry is carried unless the new answer restates it (the rule Covered So Far
# follows); a Goal the summarizer rewrote in other words keeps the earlier wording beside it.
CARRIED_ENTRIES = ("Goal", "Constraints & Preferences", "Done", "Key Decisions")


def has_checkpoint_headings(text: str) -> bool:
    """Whether an answer is shaped like a checkpoint at all: at least one of its headings.
    "Noted." or a chatty reply is not, and must not replace history."""
    _, sections = parse_checkpoint(text)
    return bool(sections)


def _entries(lines: list[str]) -> list[str]:
    """A section's entries: blank lines, "(none)" markers and cap notes left out."""
    return [
        ln
        for ln in _strip_blank(lines)
        if ln.strip() and not _is_empty_marker(ln) and not _CAP_NOTE.match(ln)
    ]


def _entry_key(line: str) -> str:
    return " ".join(_BULLET.sub("", line).strip().strip(".").lower().split())


def carry_forward(checkpoint: str, priors: Iterable[str]) -> str:
    """The earlier checkpoints' Goal, Constraints & Preferences, Done and Key Decisions,
    carried into `checkpoint` wherever it does not restate them. Whatever the summarizer
    wrote (or forgot), the task and what was settled stay in every later request."""
    _, sections = parse_checkpoint(checkpoint)
    for prior in priors:
        _, old = parse_checkpoint(prior)
        for title in CARRIED_ENTRIES:
            new = _entries(sections.get(title, []))
            keys = {_entry_key(line) for line in new}
            carried = [ln for ln in _entries(old.get(title, [])) if _entry_key(ln) not in keys]
            if carried:
                sections[title] = [*carried, *new]  # older first, as they happened
    return render_checkpoint(sections)


# When a checkpoint is over its budget, entries go first from the sections the agent can
# best do without, oldest entries first (the files edited and the commands run, in Done,
# outlast the files only read); the Goal is cut last and only by characters. The
# user's own statements are not capped here: they have a budget of their own
# (engine/context/stated.py), inside this one.
CAP_ORDER = (
    "Critical Context",
    "Next Steps",
    "Blocked",
    "In Progress",
    # What was only read goes before what was changed: a pass that forgets a read reads it
    # again, one that forgets an edit can undo or repeat it.
    "Covered So Far",
    "Key Decisions",
    "Done",
    "Constraints & Preferences",
)


def cap_checkpoint(
    checkpoint: str,
    max_tokens: int,
    count_text: Callable[[str], int],
    count_line: Callable[[str], int] | None = None,
) -> str:
    """`checkpoint` held to `max_tokens` (`count_text` counts what the model is sent for a
    whole checkpoint, `count_line` one entry): the oldest entries of the least needed
    sections are left out until it fits. A section left with no entry goes with its
    heading, so what is capped is never a skeleton of headings. A summary that ran for
    pages would otherwise fill the window it was written to free."""
    line_tokens = count_line or count_text
    if max_tokens <= 0 or count_text(checkpoint) <= max_tokens:
        return checkpoint
    _, parsed = parse_checkpoint(checkpoint)
    sections = {title: _entries(lines) for title, lines in parsed.items()}
    sections[COVERED_SECTION] = [f"- {item}" for item in covered_items(checkpoint)]

    def rendered() -> str:
        out = dict(sections)
        items = [_BULLET.sub("", ln).strip() for ln in out.get(COVERED_SECTION, [])]
        out[COVERED_SECTION] = render_covered(items)
        return render_checkpoint(out)

    def drop(over: int) -> int:
        """Leave out entries worth about `over` tokens; what is still over afterwards."""
        for title in CAP_ORDER:
            lines = sections.get(title, [])
            while lines and over > 0:
                over -= line_tokens(lines.pop(0)) + 1
            if over <= 0:
                break
        return over

    drop(count_text(checkpoint) - max_tokens)  # an estimate per line, then exactly:
    text = rendered()
    while count_text(text) > max_tokens and any(sections.get(t) for t in CAP_ORDER):
        drop(max(1, count_text(text) - max_tokens))
        text = rendered()
    while count_text(text) > max_tokens and sections.get("Goal"):
        goal = " ".join(_BULLET.sub("", ln).strip() for ln in sections["Goal"])
        keep = len(goal) - max(40, len(goal) // 4)
        sections["Goal"] = [f"- {goal[:keep].rstrip()} …"] if keep > 40 else []
        text = rendered()
    return text
