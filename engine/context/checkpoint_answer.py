"""What becomes of a summarizer's answer: refused, or assembled into the new checkpoint.

An answer is refused when it is empty, cut off, not shaped like a checkpoint, or unusable
(engine/context/summary_checks.py). What is accepted, or nothing when all was refused, is
assembled with the parts Brim writes itself: the user's own statements
(engine/context/stated.py), Covered So Far from the tool calls, and the earlier
checkpoints' task sections carried forward. A checkpoint that would carry no Goal (the
summarizer gave none and no earlier checkpoint had one) is given the user's first request
in the summarized messages, in their own words: the task is never left to the model alone,
and a compaction whose summarizer answers were all refused still carries it (mechanical)
instead of falling back to a trim that drops it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from engine.context.checkpoint import (
    carry_forward,
    checkpoint_entries,
    has_checkpoint_headings,
    merge_covered,
    normalize_checkpoint,
    parse_checkpoint,
    render_checkpoint,
    summarizer_words,
)
from engine.context.constants import (
    STATED_SECTION,
    STORED_PROGRESS_SECTION,
    STORED_STATEMENTS_SECTION,
)
from engine.context.frame_words import frame_word, language_of
from engine.context.grounding import Ground, grounded_checkpoint
from engine.context.progress import paths_read, span_progress
from engine.context.stated import Stated
from engine.context.stored_progress import stored_progress, with_stored_progress
from engine.context.summarizer import SummaryResult
from engine.context.summary_checks import unusable_reason
from engine.context.user_statements import is_statement, sentences, told_only
from engine.messages import Message

log = logging.getLogger(__name__)

# The user's first request as the Goal, when nothing else gives one: at most this many
# characters of it (cut at a word), and only a request of a few words ("hi" is no task).
FALLBACK_GOAL_CHARS = 240
FALLBACK_GOAL_MIN_WORDS = 3
# … or so many characters of a script written without spaces (Chinese, Japanese).
FALLBACK_GOAL_MIN_CHARS = 6
FALLBACK_GOAL_LINE = "- " + frame_word("asked")


def first_request_goal(summarized: Sequence[Message], quoted: Sequence[str] = ()) -> str | None:
    """The Goal entry Brim writes from the user's first request among `summarized`, or None
    when the user wrote nothing of a few words there. What the checkpoint already quotes
    (`quoted`, the user's statements it carries) is left out of the request, not said twice."""
    language = language_of(m.content for m in summarized if m.role == "user" and m.kind == "chat")
    for m in summarized:
        if m.role != "user" or m.kind != "chat":
            continue
        text = " ".join(m.content.split())
        for statement in quoted:
            text = text.replace(" ".join(statement.split()), " ")
        text = " ".join(text.split())
        unspaced = sum(1 for ch in text if "\u3040" <= ch <= "\u9fff")
        if len(text.split()) < FALLBACK_GOAL_MIN_WORDS and unspaced < FALLBACK_GOAL_MIN_CHARS:
            continue
        # A request that only tells ("The deadline for the report is Friday, 14
        # November.") was said, not asked; in the request's own language.
        told = all(is_statement(s) for s in sentences(text))
        if len(text) > FALLBACK_GOAL_CHARS:
            text = text[:FALLBACK_GOAL_CHARS].rsplit(" ", 1)[0] + " \u2026"
        return "- " + frame_word("said" if told else "asked", language).format(text)
    return None


def summary_refusal(answer: SummaryResult, reference: str = "") -> str | None:
    """Why a summarizer's answer cannot replace history, or None when it can. `reference`
    is what it summarized (the conversation, the earlier checkpoint): an answer that loops,
    invents, changes language or leaks the prompt's scaffolding is refused too."""
    if answer.finish_reason == "length":
        return "the summary was cut off at its output limit"
    if not answer.text.strip():
        return "the summary was empty"
    if "<<<TRANSCRIPT" in answer.text or "<<<END TRANSCRIPT" in answer.text:
        return "the summary repeated the transcript instead of summarizing it"
    if not has_checkpoint_headings(answer.text):
        return "the answer was not a checkpoint (none of its headings)"
    return unusable_reason(summarizer_words(answer.text), reference)


def grounded_summary(text: str, ground: Ground) -> tuple[str, str | None]:
    """An accepted free-form checkpoint held to the conversation line by line
    (engine/context/grounding.py): what is left of it, and why it is refused when nothing
    is."""
    kept, refused = grounded_checkpoint(text, ground)
    for why in refused:
        log.info("the summary lost a line: %s", why)
    if not checkpoint_entries(kept):
        return "", "no line of the summary is found in the conversation"
    return kept, None


def _ticked(line: str) -> str:
    """The backticked path or command of a Done fact (`- edited `src/a.py``)."""
    start = line.find("`")
    return line[start + 1 : line.rfind("`")] if start >= 0 else line


def reference_text(
    messages: Sequence[Message], priors: Sequence[str], work_state: str | None
) -> str:
    """Everything the summarizer read: what its answer may draw its words from."""
    parts = [*priors, work_state or ""]
    for m in messages:
        parts.append(m.content)
        parts.extend(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return "\n".join(p for p in parts if p)


def assemble_checkpoint(
    text: str,
    priors: Sequence[str],
    summarized: Sequence[Message],
    stated: Stated,
    *,
    progress: bool = False,
) -> str:
    """The new checkpoint: what the summarizer wrote (may be ""), its mechanical sections
    put in by Brim (the user's statements, the files the `summarized` messages read, the
    stored files the earlier checkpoints named), the earlier checkpoints' task sections
    carried forward. With `progress` (a summarizer that was not asked for Done and In
    Progress, or wrote nothing) those two come from the summarized tool calls."""
    _, sections = parse_checkpoint(normalize_checkpoint(text) if text.strip() else "")
    for title in (STATED_SECTION, STORED_STATEMENTS_SECTION, STORED_PROGRESS_SECTION):
        sections.pop(title, None)  # Brim's to write, never the summarizer's
    sections.update(stated.sections())
    facts = span_progress(summarized)
    if progress:
        for title, lines in facts.items():
            sections[title] = [*sections.get(title, []), *lines]
    else:
        # The files edited and the commands run are facts of the span, written in whatever
        # the summarizer wrote: a long pass's summary tends to list what it read.
        written = "\n".join(sections.get("Done", []))
        missing = [line for line in facts.get("Done", []) if _ticked(line) not in written]
        if missing:
            sections["Done"] = [*sections.get("Done", []), *missing]
    checkpoint = merge_covered(render_checkpoint(sections), priors, paths_read(summarized))
    refs = [ref for prior in priors for ref in stored_progress(prior)]
    if refs:
        checkpoint = with_stored_progress(checkpoint, refs)
    checkpoint = carry_forward(checkpoint, priors)
    entries = checkpoint_entries(checkpoint)
    # The user's statements about themselves are quoted as such and left out of the
    # request; what they told of anything else stays in the request, the task's own words
    # ("The staging database is called …"), and is not quoted twice.
    about_self = [q for q in entries.get(STATED_SECTION, []) if not told_only(q)]
    goal = first_request_goal(summarized, about_self) if "Goal" not in entries else None
    if goal is None:
        return checkpoint
    _, sections = parse_checkpoint(checkpoint)
    if STATED_SECTION in sections:
        said = " ".join(goal.split())
        sections[STATED_SECTION] = [
            line for line in sections[STATED_SECTION]
            if " ".join(line.removeprefix("- ").split()) not in said
        ]  # fmt: skip
    return render_checkpoint({"Goal": [goal], **sections})
