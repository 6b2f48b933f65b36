"""Undoing a compaction on the history alone: the checkpoint goes, what it replaced comes
back where it stood, and whatever came after the compaction stays after it."""

import asyncio

from hypothesis import event, given
from hypothesis import strategies as st

from engine.context.compaction import compact
from engine.context.restore import compaction_span, restored_history
from engine.messages import Message, assistant, system, user

from .histories import FakeSummarizer, count, histories, turns
from .test_properties import PROPERTY


def _compacted(msgs: list[Message], window: int, after_kept: bool = False):  # type: ignore[no-untyped-def]
    return asyncio.run(
        compact(msgs, window=window, count_message=count, summarize=FakeSummarizer(),
                checkpoint_after_kept=after_kept)
    )  # fmt: skip


@PROPERTY
@given(histories(max_turns=8), turns(max_turns=3), st.sampled_from([2_048, 4_096]), st.booleans())
def test_restoring_a_compaction_gives_back_the_history_it_replaced_and_keeps_what_came_after(
    msgs, more, window, after_kept
):
    """Either layout: the checkpoint ahead of the kept messages, or after them (for an
    engine that reuses them where they now stand)."""
    result = _compacted(msgs, window, after_kept)
    event(f"compaction {result.status}")
    if not result.ok:
        return
    checkpoint, replaced_ids = compaction_span(msgs, result.messages)
    assert checkpoint == result.checkpoint_id != ""
    replaced = [m for m in msgs if m.id in set(replaced_ids)]
    restored = restored_history(
        [*result.messages, *more], checkpoint, replaced, [m.id for m in msgs]
    )
    assert restored == [*msgs, *more]
    assert not any(m.id == checkpoint for m in restored)


def test_the_request_a_compaction_kept_goes_back_after_the_work_it_asked_for_came_before():
    """Mid-turn, the rebuild keeps the turn's request ahead of older tool work that it
    summarized; restoring puts every message back in its first place."""
    head = system("You help.")
    ask = user("Plan my trip to Lisbon.")
    work = [assistant(f"step {i}: " + "detail " * 40) for i in range(6)]
    summary = Message(role="system", content="## Goal\nTrip.", kind="summary")
    note = Message(role="user", content="[continue]", kind="continuation")
    before = [head, ask, *work]
    rebuilt = [head, summary, note, ask, *work[-2:]]
    checkpoint, replaced_ids = compaction_span(before, rebuilt)
    assert (checkpoint, replaced_ids) == (summary.id, [m.id for m in work[:4]])
    replaced = [m for m in before if m.id in replaced_ids]
    assert restored_history(rebuilt, summary.id, replaced, [m.id for m in before]) == before


def test_a_checkpoint_no_longer_live_cannot_be_undone_and_a_rewrite_without_one_is_no_compaction():
    kept = [system("You help."), user("hi")]
    assert compaction_span(kept, kept[:1]) == (None, [])
    assert restored_history(kept, "gone", [], []) is None
