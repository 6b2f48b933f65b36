"""Property-based tests over random histories with tool calls: whatever rung runs, the
history stays valid for an engine, the system prompt and pinned task survive, and the
request fits whenever it can.

The one documented case where a request cannot fit: the fixed messages (system, pinned,
task, summary, continuation), the current request and the newest unit (an assistant tool
call with its results) alone exceed the budget. The newest unit is always kept, so the
ladder sends it and lets the engine's overflow path answer.
"""

import asyncio

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.context.budget import ContextBudget, overflow_trim_budget, recent_tail_tokens
from engine.context.checkpoint import covered_items, covered_keys, merge_covered, stored_checkpoint
from engine.context.clearing import clear_tool_results, protected_window_start
from engine.context.compaction import compact
from engine.context.history import group_units, is_fixed, is_turn_start
from engine.context.manager import ContextManager
from engine.context.trimming import trim_messages
from engine.messages import Message, user

from .histories import (
    FakeSummarizer,
    count,
    histories,
    is_subsequence,
    minimal_cost,
    pairing_ok,
    summaries,
    total,
    turns,
)

PROPERTY = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def pinned_ids(messages: list[Message]) -> list[str]:
    return [
        m.id
        for m in messages
        if (m.role == "system" and m.kind != "summary") or m.kind in ("pinned", "task")
    ]


def assert_survivors(before: list[Message], after: list[Message]) -> None:
    assert after[0] is before[0]
    assert pinned_ids(after) == pinned_ids(before)


@PROPERTY
@given(histories())
def test_the_strategy_only_builds_valid_histories(msgs):
    assert pairing_ok(msgs) and msgs[0].role == "system"


@PROPERTY
@given(histories(), st.booleans())
def test_clearing_keeps_every_message_its_pairing_and_a_second_pass_changes_nothing(msgs, store):
    stored: dict[str, str] = {}
    keep = (lambda i, t: stored.setdefault(i, t) is not None) if store else None
    first = clear_tool_results(msgs, count_message=count, store_result=keep)
    out = first.messages
    assert ids(out) == ids(msgs) and pairing_ok(out)
    assert_survivors(msgs, out)
    start = protected_window_start(msgs)
    assert out[start:] == msgs[start:]
    assert total(out) <= total(msgs)
    assert set(stored) == (set(first.cleared_ids) if store else set())
    second = clear_tool_results(out, count_message=count, store_result=keep)
    assert second.cleared == 0 and second.messages == out


@PROPERTY
@given(histories(), st.integers(0, 8_000), st.integers(0, 4))
def test_trimming_keeps_pairs_whole_keeps_the_fixed_messages_and_fits_when_it_can(
    msgs, budget, protected
):
    result = trim_messages(msgs, budget=budget, count_message=count, protected_turns=protected)
    out = result.messages
    assert pairing_ok(out) and is_subsequence(out, msgs)
    assert_survivors(msgs, out)
    assert [m.id for m in out if is_fixed(m)] == [m.id for m in msgs if is_fixed(m)]
    assert out[-1] is msgs[-1]
    assert result.tokens_after == total(out) and result.dropped == len(msgs) - len(out)
    event(f"trim fits={result.fits} dropped={bool(result.dropped)}")
    if minimal_cost(msgs) <= budget:
        assert result.fits and total(out) <= budget
    # The protected zone is kept whole whenever it fits with the fixed messages.
    starts = [i for i, m in enumerate(msgs) if is_turn_start(m)]
    n = max(protected, 1)
    if len(starts) >= n:
        zone = msgs[starts[-n] :]
        fixed = [m for m in msgs[: starts[-n]] if is_fixed(m)]
        if total(zone) + total(fixed) <= budget:
            assert out[-len(zone) :] == zone


@PROPERTY
@given(histories())
def test_an_overflow_trim_keeps_pairs_whole_and_lands_at_seventy_percent_when_it_can(msgs):
    budget = overflow_trim_budget(total(msgs))
    result = trim_messages(msgs, budget=budget, count_message=count)
    assert pairing_ok(result.messages)
    assert_survivors(msgs, result.messages)
    if minimal_cost(msgs) <= budget:
        assert total(result.messages) <= budget


def newest_unit_tokens(messages: list[Message]) -> int:
    free = [m for m in messages if not is_fixed(m)]
    units = group_units(free)
    return sum(count(free[i]) for i in units[-1]) if units else 0


@PROPERTY
@given(histories(max_turns=8), st.sampled_from([2_048, 4_096, 8_192]), st.booleans())
def test_compaction_rebuilds_a_valid_history_around_one_merged_summary(msgs, window, after_kept):
    """`after_kept`: the layout for an engine that reuses kept messages where they now
    stand (the checkpoint before the current request instead of ahead of the tail)."""
    fake = FakeSummarizer()
    result = asyncio.run(
        compact(msgs, window=window, count_message=count, summarize=fake,
                checkpoint_after_kept=after_kept)
    )  # fmt: skip
    out = result.messages
    event(f"compaction {result.status}")
    assert pairing_ok(out)
    assert_survivors(msgs, out)
    if not result.ok:
        assert out == msgs
        return
    head = [m for m in msgs if is_fixed(m) and m.kind not in ("summary", "continuation")]
    assert out[: len(head)] == head
    assert len(summaries(out)) == 1
    at = next(i for i, m in enumerate(out) if m.kind == "summary")
    assert out[at + 1].kind == "continuation"
    kept = [m for m in out[len(head) :] if m.kind not in ("summary", "continuation")]
    assert kept == [*out[len(head) : at], *out[at + 2 :]]
    assert kept[-1] is msgs[-1]  # the newest message is kept
    assert is_subsequence(kept, msgs)
    starts = [i for i, m in enumerate(out) if is_turn_start(m)]
    answered = msgs[-1].role == "assistant" and not msgs[-1].tool_calls
    if after_kept and answered:  # no current request: after all that is kept
        assert at + 2 == len(out)
    elif not after_kept or not starts:
        assert out[-1] is msgs[-1]
        assert at == len(head)
    else:  # just before the last request the tail kept, and no earlier
        assert out[-1] is msgs[-1]
        assert at + 2 == starts[-1]
    assert result.tokens_after < result.tokens_before
    for prior in summaries(msgs):
        assert covered_keys(stored_checkpoint(prior)) <= covered_keys(result.checkpoint)
    tail_budget = recent_tail_tokens(window)
    assert total(result.plan.tail) <= tail_budget or newest_unit_tokens(msgs) > tail_budget // 2


@PROPERTY
@given(histories(max_turns=5), turns(max_turns=5))
def test_compacting_twice_merges_the_first_summary_and_keeps_every_covered_path(msgs, more):
    msgs = [*msgs, user("Also see one.py.")]  # the files each summarizer names are named
    first = asyncio.run(
        compact(msgs, window=2_048, count_message=count, summarize=FakeSummarizer(["`one.py`"]))
    )
    grown = [*first.messages, *more, user("And two.py.")]
    fake = FakeSummarizer(["`two.py`"])
    second = asyncio.run(compact(grown, window=2_048, count_message=count, summarize=fake))
    assert pairing_ok(second.messages)
    event(f"first {first.status}, second {second.status}")
    if not (first.ok and second.ok):
        return
    assert "`one.py`" in fake.prompt.split("<<<TRANSCRIPT")[0]
    assert covered_keys(first.checkpoint) <= covered_keys(second.checkpoint)
    assert {"one.py", "two.py"} <= covered_keys(second.checkpoint)
    assert len(summaries(second.messages)) == 1


@PROPERTY
@given(
    histories(max_turns=8),
    st.sampled_from([2_048, 4_096, 8_192]),
    st.integers(0, 400),
    st.sampled_from(["works", "fails", "empty", "none"]),
)
def test_the_prepared_request_is_valid_keeps_the_task_and_fits_when_it_can(
    msgs, window, overhead, summarizer
):
    fake = {
        "works": FakeSummarizer(),
        "fails": FakeSummarizer(error=RuntimeError("down")),
        "empty": FakeSummarizer(text=""),
        "none": None,
    }[summarizer]
    events: list = []
    manager = ContextManager(window=window, count_message=count, summarize=fake, sink=events.append)
    prepared = asyncio.run(manager.prepare(msgs, overhead_tokens=overhead))
    history = prepared.history
    assert pairing_ok(prepared.request)
    assert_survivors(msgs, history)
    assert history[-1] is msgs[-1]
    if prepared.nudge is not None:
        assert prepared.request == [*history, prepared.nudge]
        assert prepared.nudge not in history
    budget = ContextBudget(window)
    status = prepared.compaction.status if prepared.compaction else "-"
    event(f"prepare {summarizer}: {status} trimmed={bool(prepared.trimmed)}")
    if minimal_cost(history) + overhead <= budget.trim_threshold:
        assert total(history) + overhead <= budget.trim_threshold
    assert len([e for e in events if getattr(e, "phase", "") == "started"]) <= 1


_segment = st.text("abcxyz_.-", min_size=1, max_size=6).filter(lambda s: s.strip(".") != "")


@given(
    st.lists(st.lists(_segment, min_size=1, max_size=4).map("/".join), max_size=40),
    st.lists(st.lists(_segment, min_size=1, max_size=4).map("/".join), max_size=40),
)
def test_covered_so_far_names_every_path_however_it_is_grouped_and_merging_again_is_stable(
    first, second
):
    once = merge_covered("## Covered So Far\n- (none)\n", [], first)
    twice = merge_covered("## Covered So Far\n- (none)\n", [once], second)
    keys = covered_keys(twice)
    assert {p.lower() for p in first + second} <= keys
    assert len(covered_items(twice)) == len(keys)  # each source once
    assert merge_covered(twice, [twice], first) == twice
