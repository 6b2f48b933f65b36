"""Issue 11 item 3: budgets derived from the window and the fixed prefix, the answer's room
reserved where the engine adds it to the prompt, and no trimming below the 95% line after a
compaction that worked."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from engine.context.budget import ContextBudget
from engine.context.manager import ContextManager
from engine.events import TrimEvent
from engine.messages import assistant, system, user

from .histories import CHECKPOINT_TEMPLATE, FakeSummarizer, Ids, count, cycle, pinned, total


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


def test_after_a_compaction_that_worked_nothing_is_trimmed_below_the_95_percent_line():
    # A long checkpoint leaves the rebuilt history between 80% and 95% of the window: what
    # compaction chose to keep verbatim stays (it used to be trimmed back to 80%, dropping
    # recent turns without a summary right after the summary was written).
    events: list = []
    checkpoint = CHECKPOINT_TEMPLATE.format(covered="- `a.py`") + "\nDetail. " * 1300
    manager = ContextManager(
        window=4_000,
        count_message=count,
        summarize=FakeSummarizer(text=checkpoint),
        sink=events.append,
    )
    ids = Ids()
    msgs = [system("You are Brim."), pinned(), user("audit the repo")]
    for _ in range(17):
        msgs.extend(cycle(ids, 700))
    for i in range(5):
        msgs += [user(f"next part {i} " + "word " * 20), assistant("ok " * 20)]
    prepared = asyncio.run(manager.prepare(msgs))

    assert prepared.compaction is not None and prepared.compaction.ok
    assert total(prepared.history) <= 0.95 * 4_000
    assert [e for e in events if isinstance(e, TrimEvent)] == []
    assert len(prepared.history) == prepared.compaction.messages_after
    assert all(m in prepared.history for m in msgs[-10:])
