"""A long file-reading pass compacts again and again: each checkpoint merges the one before,
is capped to its budget, and what the cap leaves out of Covered So Far is stored and named
(engine/context/stored_progress.py). Compaction after compaction, what the model is shown
for the checkpoint has to stay within that budget and keep the user's goal, or the window
fills with references until every step compacts and the task is lost."""

from __future__ import annotations

import pytest

from engine.context.checkpoint import checkpoint_entries
from engine.context.checkpoint_answer import assemble_checkpoint
from engine.context.model_face import render_for_model
from engine.context.stated import Stated
from engine.context.stored_progress import cap_keeping_progress, stored_progress

BUDGET = 300  # the checkpoint's tokens (a small window's summary budget)


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _face_tokens(checkpoint: str) -> int:
    return _tokens(render_for_model(checkpoint))


def _answer(n: int) -> str:
    """What the summarizer writes at the n-th compaction: the file it has just read."""
    return (
        f"## Goal\nAudit the files one by one.\n## Covered So Far\n- `file{n}.txt`\n"
        f"## Key Decisions\n- file{n}.txt is fine\n"
    )


def _compact_many(times: int) -> str:
    stored: dict[str, str] = {}

    def store(ref: str, text: str) -> bool:
        stored[ref] = text
        return True

    checkpoint = ""
    for n in range(times):
        priors = [checkpoint] if checkpoint else []
        merged = assemble_checkpoint(_answer(n), priors, [], Stated())
        checkpoint = cap_keeping_progress(merged, BUDGET, _face_tokens, _tokens, store)
    return checkpoint


@pytest.mark.xfail(
    strict=True,
    reason="Brim defect: every compaction past the cap stores the entries it left out in a "
    "new file and adds one more Stored Progress reference (~45 tokens); the references are "
    "carried forever and never capped, so the checkpoint outgrows its budget and the cap "
    "drops the Goal instead (engine/context/stored_progress.py, checkpoint.py CAP_ORDER)",
)
def test_a_checkpoint_stays_within_its_budget_and_keeps_the_goal_over_many_compactions():
    checkpoint = _compact_many(60)
    assert _face_tokens(checkpoint) <= BUDGET
    assert checkpoint_entries(checkpoint).get("Goal")


def test_the_first_compactions_past_the_cap_store_what_it_left_out_and_keep_the_goal():
    """The premise: 29 compactions outgrow the cap (the reads it left out are stored and
    named) and the checkpoint is still within its budget with its goal."""
    checkpoint = _compact_many(29)
    assert stored_progress(checkpoint)
    assert _face_tokens(checkpoint) <= BUDGET
    assert checkpoint_entries(checkpoint).get("Goal")
