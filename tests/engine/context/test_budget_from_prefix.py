"""Issue 11 item 3: budgets derived from the window and the fixed prefix, the answer's room
reserved where the engine adds it to the prompt, and no trimming below the 95% line after a
compaction that worked."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from engine.context.budget import ContextBudget
from engine.context.manager import ContextManager
from engine.events import NoticeEvent, TrimEvent
from engine.messages import assistant, system, user

from .histories import FakeSummarizer, Ids, count, cycle, pinned, summaries, text, total


@given(
    window=st.integers(min_value=2048, max_value=262_144),
    share=st.floats(min_value=0.0, max_value=0.4),
    reserve=st.sampled_from([0, 256, 1024]),
)
def test_a_compaction_rebuilt_from_the_budgets_lands_under_sixty_percent_whatever_the_prefix(
    window: int, share: float, reserve: int
):
    budget = ContextBudget(window, output_reserve=reserve)
    budget = budget.with_fixed(int(share * budget.prompt_space))
    rebuilt = budget.fixed_tokens + budget.summary_tokens + budget.tail_tokens
    assert rebuilt <= 0.6 * budget.prompt_space
    # A tool result's first cut fits the tail that compaction keeps verbatim.
    assert budget.tool_result_tokens <= max(budget.tail_tokens, 200)


def test_a_larger_fixed_prefix_leaves_a_smaller_tail_summary_and_tool_result():
    light = ContextBudget(8192).with_fixed(300)
    heavy = ContextBudget(8192).with_fixed(2800)  # the full tool schemas and a long prompt
    assert heavy.tail_tokens < light.tail_tokens
    assert heavy.summary_tokens < light.summary_tokens
    assert heavy.tool_result_tokens < light.tool_result_tokens
    # Not a fixed 16,000 characters (about 4,000 tokens) on a small window.
    assert heavy.tool_result_tokens < 2_000


def test_vllm_max_tokens_is_taken_off_the_window_before_every_threshold():
    budget = ContextBudget(4096, output_reserve=1024)
    assert budget.prompt_space == 3072
    assert budget.compact_threshold == int(3072 * 0.8)
    assert budget.trim_threshold <= 3072
    assert budget.usage(3073).over_window and not budget.usage(3072).over_window
    assert not ContextBudget(4096).usage(3073).over_window


def _long_pinned_run(pinned_tokens: int) -> list:
    """A run whose pinned task is long enough that compaction cannot rebuild it below the
    compaction threshold: the pinned message always survives, so the system prompt, the
    pinned task, the checkpoint and the recent tail together land where `pinned_tokens`
    puts them."""
    ids = Ids()
    msgs = [system("You are Brim."), pinned("Task: " + text(pinned_tokens * 4, "rule"))]
    msgs.append(user("audit the repo"))
    for _ in range(12):
        msgs.extend(cycle(ids, 400))
    for i in range(8):
        msgs += [user(f"next part {i} " + "word " * 20), assistant("ok " * 20)]
    return msgs


def test_after_a_compaction_that_worked_nothing_is_trimmed_below_the_95_percent_line():
    # A long pinned task leaves the rebuilt history between 80% and 95% of the window: what
    # compaction chose to keep verbatim stays (it used to be trimmed back to 80%, dropping
    # recent turns without a summary right after the summary was written).
    events: list = []
    manager = ContextManager(
        window=4_000, count_message=count, summarize=FakeSummarizer(), sink=events.append
    )
    msgs = _long_pinned_run(2_300)
    prepared = asyncio.run(manager.prepare(msgs))

    assert prepared.compaction is not None and prepared.compaction.ok
    assert prepared.compaction.source == "freeform"
    # The premise, on what the compaction itself rebuilt (before any later rung): above the
    # compaction threshold, below the trim line.
    rebuilt = prepared.compaction.messages
    assert manager.budget.compact_threshold < total(rebuilt) <= manager.budget.trim_threshold
    # What the user would notice: no trim, and every message compaction kept is sent.
    assert [e for e in events if isinstance(e, TrimEvent)] == []
    assert prepared.trimmed == 0
    assert [m.id for m in prepared.history] == [m.id for m in rebuilt]
    assert all(m in prepared.history for m in msgs[-16:])


def test_a_compaction_that_still_leaves_the_history_over_the_trim_line_is_trimmed_at_once():
    # `/compact` on a run whose pinned task alone is most of the window: the rebuilt history
    # is still above 95%, so the trim rung runs right after the summary, drops the oldest
    # kept units (the user is told), and keeps the newest turns and the checkpoint.
    events: list = []
    manager = ContextManager(
        window=4_000, count_message=count, summarize=FakeSummarizer(), sink=events.append
    )
    msgs = _long_pinned_run(3_000)
    outcome = asyncio.run(manager.compact(msgs))

    assert outcome.compaction is not None and outcome.compaction.ok
    # The premise, on what the compaction itself rebuilt: still above the trim line.
    assert total(outcome.compaction.messages) > manager.budget.trim_threshold
    # The trim ran at once: fewer messages than compaction kept, and under the line.
    assert len(outcome.history) < outcome.compaction.messages_after
    assert total(outcome.history) <= manager.budget.trim_threshold
    (trim,) = [e for e in events if isinstance(e, TrimEvent)]
    assert trim.messages_dropped == outcome.trimmed > 0
    assert any(
        isinstance(e, NoticeEvent) and str(trim.messages_dropped) in e.text and "Trim" in e.text
        for e in events
    )
    assert len(summaries(outcome.history)) == 1
    assert all(m in outcome.history for m in msgs[-6:])
