"""What becomes of a summarizer's answer: refused, or assembled into the new checkpoint.

An answer is refused when it is empty, cut off, not shaped like a checkpoint, or unusable
(engine/context/summary_checks.py). What is accepted, or nothing when all was refused, is
assembled with the parts Brim writes itself: the user's own statements
(engine/context/stated.py), Covered So Far from the tool calls, and the earlier
checkpoints' task sections carried forward.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.context.checkpoint import (
    carry_forward,
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
from engine.context.progress import paths_read, span_progress
from engine.context.stated import Stated
from engine.context.stored_progress import stored_progress, with_stored_progress
from engine.context.summarizer import SummaryResult
from engine.context.summary_checks import unusable_reason
from engine.messages import Message


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
    if progress:
        for title, lines in span_progress(summarized).items():
            sections[title] = [*sections.get(title, []), *lines]
    checkpoint = merge_covered(render_checkpoint(sections), priors, paths_read(summarized))
    refs = [ref for prior in priors for ref in stored_progress(prior)]
    if refs:
        checkpoint = with_stored_progress(checkpoint, refs)
    return carry_forward(checkpoint, priors)
