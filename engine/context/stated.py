"""The user's own words, carried from checkpoint to checkpoint by Brim, not by the model.

Like Covered So Far, the user's first-person statements (engine/context/user_statements.py)
are not left to the summarizer: every compaction takes the earlier checkpoint's statements,
applies the removed user messages in order (new statements join, corrections replace,
"forget that I …" removes), applies what the kept tail takes back, and writes the result
verbatim into the new checkpoint. They are held to a budget from the window; the oldest
beyond it are written to the tool-result store, and the checkpoint names the stored file so
the model can read it with `retrieve_tool_result`. A model sent no tools could read no such
file: for it the statements take all the task leaves, before the summarizer's other parts, so
they stay in the request (`statement_budget`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from engine.context.checkpoint import (
    CARRIED_ENTRIES,
    checkpoint_entries,
    parse_checkpoint,
    render_checkpoint,
)
from engine.context.constants import (
    STATED_SECTION,
    STATED_SUMMARY_SHARE,
    STORED_STATEMENTS_SECTION,
)
from engine.context.user_statements import carry_through, told_only
from engine.messages import Message

log = logging.getLogger(__name__)

StoreText = Callable[[str, str], bool]  # (id, text) -> stored?
STORED_ID_PREFIX = "user-statements-"
STORED_HEAD = "What the user told you earlier in this conversation, in their own words:"
# What one statement costs in the rendered face beyond its own text (quotes, a line break).
PER_STATEMENT_TOKENS = 3


@dataclass(frozen=True)
class Stated:
    """The statements a checkpoint carries, oldest first, and the stored files that hold
    the ones which outgrew the budget."""

    statements: tuple[str, ...] = ()
    stored: tuple[str, ...] = ()

    def sections(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if self.statements:
            out[STATED_SECTION] = [f"- {s}" for s in self.statements]
        if self.stored:
            out[STORED_STATEMENTS_SECTION] = [f"- `{ref}`" for ref in self.stored]
        return out


def statement_budget(
    summary_tokens: int, *, tools: bool, face_tokens: Callable[[str], int], task: str = ""
) -> int:
    """The tokens the user's statements may take of a checkpoint of `summary_tokens`.

    With tools, a share of it: the oldest beyond it are stored and named for
    `retrieve_tool_result`. Without tools a stored statement is out of reach, so they take
    what the task leaves, that share at least: `task` is the checkpoint without statements
    (its Goal, Constraints & Preferences, Done and Key Decisions are kept before them),
    `face_tokens` counts what the model is shown for a stored checkpoint (so the opening,
    the closing and the line that introduces the statements are counted too). The
    summarizer's other parts get what the statements leave (the cap cuts those first)."""
    share = int(summary_tokens * STATED_SUMMARY_SHARE)
    if tools:
        return share
    _, sections = parse_checkpoint(task)
    kept = {title: sections[title] for title in CARRIED_ENTRIES if title in sections}
    kept[STATED_SECTION] = ["- ."]
    return max(share, summary_tokens - face_tokens(render_checkpoint(kept)))


def stated_in(checkpoint: str) -> Stated:
    """What an earlier checkpoint carried."""
    entries = checkpoint_entries(checkpoint)
    stored = tuple(e.strip("`") for e in entries.get(STORED_STATEMENTS_SECTION, []))
    return Stated(tuple(entries.get(STATED_SECTION, [])), stored)


def _user_texts(messages: Iterable[Message]) -> list[str]:
    """What the user wrote: chat messages of the user role only (not Brim's continuation
    notes or a pinned task, not tool output, not the model)."""
    return [m.content for m in messages if m.role == "user" and m.kind == "chat"]


def carry_statements(
    priors: Sequence[str],
    removed: Sequence[Message],
    tail: Sequence[Message],
    *,
    budget: int,
    count_text: Callable[[str], int],
    store: StoreText | None = None,
) -> Stated:
    """The statements the new checkpoint carries: the earlier checkpoints' (oldest first),
    then the removed user messages applied in order, then the retractions of the kept tail;
    the newest that fit `budget` tokens stay, the older ones go to `store`."""
    carried: list[str] = []
    stored: list[str] = []
    for prior in priors:
        before = stated_in(prior)
        carried = [*carried, *(s for s in before.statements if s not in carried)]
        stored.extend(ref for ref in before.stored if ref not in stored)
    carried = carry_through(carried, _user_texts(removed))
    carried = carry_through(carried, _user_texts(tail), add=False)

    kept = _within(carried, budget, count_text)
    spilled = [s for s in carried if s not in kept]
    if spilled:
        ref = _store(spilled, store)
        if ref is not None:
            stored.append(ref)
    return Stated(tuple(kept), tuple(stored))


def _within(carried: list[str], budget: int, count_text: Callable[[str], int]) -> list[str]:
    """The statements that fit `budget`, in their order: the user's statements about
    themselves first, then what they told of anything else, each newest first."""
    chosen: set[int] = set()
    room = budget
    for told in (False, True):
        for i in reversed(range(len(carried))):
            if told_only(carried[i]) != told:
                continue
            cost = count_text(carried[i]) + PER_STATEMENT_TOKENS
            if cost > room and chosen:
                break
            chosen.add(i)
            room -= cost
    return [s for i, s in enumerate(carried) if i in chosen]


def _store(statements: list[str], store: StoreText | None) -> str | None:
    text = STORED_HEAD + "\n" + "\n".join(f"- {s}" for s in statements) + "\n"
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    ref = STORED_ID_PREFIX + digest
    if store is None:
        log.warning("no store for %d older user statements: they are left out", len(statements))
        return None
    try:
        if store(ref, text):
            return ref
    except Exception:
        log.warning("could not store %d older user statements", len(statements), exc_info=True)
        return None
    log.warning("could not store %d older user statements", len(statements))
    return None
