import asyncio

from engine.context.checkpoint import covered_keys, stored_checkpoint
from engine.context.manager import ContextManager
from engine.events import (
    NOTICE_AUTO_COMPACTING,
    NOTICE_TRIMMED,
    CompactionEvent,
    NoticeEvent,
    TrimEvent,
)
from engine.messages import Message, assistant, notice, system, user

from .histories import (
    FakeSummarizer,
    Ids,
    count,
    cycle,
    is_guided_question,
    pairing_ok,
    pinned,
    summaries,
    terse_run,
    total,
)


def run(coro):
    return asyncio.run(coro)


def make(window: int = 4_000, summarize=None, **kw):
    events: list = []
    fake = summarize if summarize is not None else FakeSummarizer()
    manager = ContextManager(
        window=window, count_message=count, summarize=fake, sink=events.append, **kw
    )
    return manager, events, fake


def busy_run(ids: Ids, cycles: int, chars: int = 700) -> list[Message]:
    """An agent turn of many small tool results (below the clearing size)."""
    msgs = [system("You are Brim."), pinned(), user("audit the repo")]
    for _ in range(cycles):
        msgs.extend(cycle(ids, chars))
    return msgs


def kinds(events):
    out = []
    for e in events:
        if isinstance(e, CompactionEvent):
            out.append(f"compaction:{e.phase}:{e.reason}")
        else:
            out.append(e.type)
    return out


def test_below_half_the_window_nothing_is_touched_and_nothing_is_appended():
    manager, events, _ = make()
    msgs = busy_run(Ids(), 3)
    prepared = run(manager.prepare(msgs))
    assert prepared.request == msgs and prepared.history == msgs
    assert prepared.nudge is None and not prepared.changed
    assert events == []


def test_above_half_old_large_tool_results_are_cleared_first_and_silently():
    ids = Ids()
    manager, events, fake = make(window=4_000)
    msgs = [system("sys"), user("go")]
    for _ in range(7):
        msgs.extend(cycle(ids, 1_200))
    assert 0.5 < total(msgs) / 4_000 < 0.7
    prepared = run(manager.prepare(msgs))
    assert prepared.cleared == 2 and prepared.changed
    assert "retrieve_tool_result" not in prepared.history[3].content  # no store: re-run
    assert len(prepared.history) == len(msgs)
    assert events == [] and fake.requests == []


def test_past_seventy_percent_the_request_carries_a_warning_that_is_never_stored():
    manager, events, _ = make()
    msgs = [system("sys"), user("x" * 11_600)]
    prepared = run(manager.prepare(msgs))
    assert prepared.nudge is not None and prepared.nudge.content.startswith("[CONTEXT WARNING:")
    assert prepared.request == [*msgs, prepared.nudge]
    assert prepared.history == msgs
    assert events == []


def test_a_model_offered_no_tools_is_sent_the_users_question_last_not_a_context_line():
    # A small model answers the bracketed line that follows the question ("Record what you
    # need…") instead of the question; without tools it can act on none of those lines.
    manager, _, _ = make()
    msgs = [system("sys"), user("x" * 11_600)]
    prepared = run(manager.prepare(msgs, tools_offered=False))
    assert prepared.nudge is None
    assert prepared.request[-1] is msgs[-1]
    assert manager.next_request(msgs, tools_offered=False)[-1] is msgs[-1]
    compacted = run(manager.prepare(busy_run(Ids(), 17), tools_offered=False))
    assert compacted.compaction is not None and compacted.nudge is None
    assert all("[CONTEXT" not in str(m.content) for m in compacted.request)


def test_overhead_counts_toward_the_budget():
    manager, _, _ = make()
    msgs = [system("sys"), user("x" * 8_000)]
    assert run(manager.prepare(msgs)).nudge is None
    assert run(manager.prepare(msgs, overhead_tokens=900)).nudge is not None


def test_at_the_compaction_threshold_the_run_compacts_and_says_so_in_order():
    manager, events, _ = make()
    msgs = busy_run(Ids(), 17)
    before = total(msgs)
    assert before >= 3_200
    prepared = run(manager.prepare(msgs))
    assert prepared.compaction is not None and prepared.compaction.ok
    assert kinds(events) == [
        "notice",
        "compaction:started:preflight",
        "compaction:finished:preflight",
        "notice",
    ]
    assert events[0].text.startswith(f"Context window ~{round(100 * before / 4_000)}% full (~")
    assert events[0].text.endswith("tokens): auto-compacting…")
    finished = events[2]
    assert finished.messages_before == len(msgs)
    assert finished.messages_after == len(prepared.history)
    assert events[3].text == (
        f"Compacted {len(msgs)} → {len(prepared.history)} messages "
        f"(saved ~{finished.tokens_saved} tokens)"
    )
    assert total(prepared.history) < 3_200
    assert pairing_ok(prepared.history)


def test_the_request_after_a_compaction_resumes_with_the_progress_note_then_warns_normally():
    manager, _, _ = make()
    prepared = run(manager.prepare(busy_run(Ids(), 17)))
    nudge = prepared.nudge.content
    assert nudge.startswith("[CONTEXT COMPACTED:") and "WARNING" not in nudge
    assert "do not redo it" in nudge and "Files read:" in nudge
    again = run(manager.prepare(prepared.history))
    assert again.nudge is None


def test_a_failed_summarizer_trims_to_the_compaction_threshold_and_tells_the_user_once():
    manager, events, _ = make(summarize=FakeSummarizer(error=RuntimeError("boom")))
    msgs = busy_run(Ids(), 17)
    prepared = run(manager.prepare(msgs))
    assert kinds(events) == [
        "notice",
        "compaction:started:preflight",
        "compaction:failed:preflight",
        "trim",
        "notice",
    ]
    assert "boom" in events[-1].text and "without a summary" in events[-1].text
    assert events[3].messages_dropped == len(msgs) - len(prepared.history) > 0
    assert total(prepared.history) <= manager.budget.compact_threshold
    assert prepared.history[:3] == msgs[:3] and prepared.history[-2:] == msgs[-2:]
    assert pairing_ok(prepared.history)

    # It fails again on the next request: the reason is not said a second time; what the
    # second trim discarded is (a plain trim notice, counted).
    events.clear()
    again = [*prepared.history, *busy_run(Ids("again"), 17)[3:]]
    second = run(manager.prepare(again))
    assert "compaction:failed:preflight" in kinds(events)
    told = [e for e in events if isinstance(e, NoticeEvent) and e.level == "warning"]
    assert [e.kind for e in told] == [NOTICE_AUTO_COMPACTING, NOTICE_TRIMMED]
    assert not any("boom" in e.text for e in told)
    assert told[-1].details == {"messages_dropped": len(again) - len(second.history)}
    assert len(second.history) < len(again)


def test_a_cut_off_summary_with_cut_off_guided_answers_leaves_the_history_whole_then_trims():
    fake = FakeSummarizer(finish_reason="length")
    manager, events, _ = make(summarize=fake)
    prepared = run(manager.prepare(terse_run(6)))
    assert any(map(is_guided_question, fake.requests))  # the guided answers were cut off too
    assert prepared.compaction.status == "refused"
    assert "cut off" in events[-1].text
    assert summaries(prepared.history) == []


def test_a_compaction_whose_summaries_were_all_refused_says_so_as_data():
    """The run read files, so the checkpoint is what the tools read: compacted, and the
    event and the notice say the summary is the mechanical part alone."""
    fake = FakeSummarizer(finish_reason="length")
    manager, events, _ = make(summarize=fake)
    prepared = run(manager.prepare(busy_run(Ids(), 17)))
    assert any(map(is_guided_question, fake.requests))  # the guided answers were cut off too
    assert prepared.compaction.ok and prepared.compaction.source == "mechanical"
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert [e.summary for e in finished] == ["mechanical"]
    (told,) = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "compacted"]
    assert told.details["summary"] == "mechanical" and "refused" in told.text


def test_nothing_to_summarize_trims_without_an_auto_compacting_notice():
    ids = Ids()
    manager, events, fake = make()
    msgs = [system("sys"), user("read it"), *cycle(ids, [6_000, 14_000])]
    prepared = run(manager.prepare(msgs))
    assert fake.requests == []
    assert not any(isinstance(e, CompactionEvent) for e in events)
    assert not any("auto-compacting" in getattr(e, "text", "") for e in events)
    # The newest unit is always kept, every message of it; its large result is cut to fit.
    assert [m.id for m in prepared.history] == [m.id for m in msgs]
    assert "[Result cut: " in prepared.history[-1].content
    assert prepared.fits


def test_without_a_summarizer_the_ladder_trims_and_says_why():
    manager = ContextManager(window=4_000, count_message=count)
    events: list = []
    manager.sink = events.append
    prepared = run(manager.prepare(busy_run(Ids(), 17)))
    assert total(prepared.history) <= manager.budget.compact_threshold
    assert "no summarizer" in events[-1].text


def test_manual_compaction_goes_through_the_same_path_without_the_preflight_notice():
    manager, events, fake = make(window=8_000)
    msgs = busy_run(Ids(), 17)
    outcome = run(manager.compact(msgs))
    assert outcome.compaction.ok and outcome.compaction.reason == "manual"
    assert kinds(events) == ["compaction:started:manual", "compaction:finished:manual", "notice"]
    assert len(fake.requests) == 1
    assert summaries(outcome.history)


def test_manual_compaction_with_nothing_to_summarize_says_so():
    manager, events, _ = make()
    outcome = run(manager.compact([system("sys"), user("hi")]))
    assert outcome.compaction is None and outcome.trimmed == 0
    assert [e.text for e in events] == [
        "Nothing to compact yet: every message is recent enough to keep as it is"
    ]


def test_an_overflow_compacts_regardless_of_the_estimate_and_shrinks_the_history():
    manager, events, _ = make(window=16_000)
    msgs = busy_run(Ids(), 17)
    assert not manager.usage(msgs).compact_due
    outcome = run(manager.on_overflow(msgs))
    assert outcome.compaction.ok and outcome.compaction.reason == "context_overflow"
    assert outcome.shrank
    assert kinds(events)[:2] == ["notice", "compaction:started:context_overflow"]
    assert total(outcome.compaction.plan.tail) <= manager.budget.tail_tokens // 2


def test_an_overflow_that_cannot_compact_trims_to_seventy_percent_of_the_history():
    manager, events, _ = make(window=16_000, summarize=FakeSummarizer(text=""))
    msgs = terse_run(14)
    outcome = run(manager.on_overflow(msgs))
    assert outcome.shrank and total(outcome.history) <= 0.7 * total(msgs)
    assert any(isinstance(e, TrimEvent) for e in events)
    assert pairing_ok(outcome.history)


def test_an_overflow_that_nothing_can_shrink_reports_it():
    ids = Ids()
    manager, _, _ = make()
    outcome = run(manager.on_overflow([system("sys"), user("x"), *cycle(ids, 40_000)]))
    assert not outcome.shrank


def test_notice_rows_are_never_sent():
    manager, _, _ = make()
    msgs = [system("sys"), notice("Context window…"), user("hi")]
    prepared = run(manager.prepare(msgs))
    assert [m.role for m in prepared.request] == ["system", "user"]


def test_iteration_nudges_ride_in_the_same_appended_message():
    manager, _, _ = make()
    msgs = [system("sys"), user("x" * 14_600)]
    prepared = run(manager.prepare(msgs, iterations_used=95, max_iterations=100))
    assert "[CONTEXT CRITICAL:" in prepared.nudge.content
    assert "[ITERATION CRITICAL:" in prepared.nudge.content
    assert prepared.request[-1] is prepared.nudge and prepared.request[-2] is msgs[-1]


def test_a_long_run_on_a_small_window_never_overflows_and_never_forgets_what_it_read():
    """40+ iterations of large tool results on a 4096-token window."""
    ids = Ids()
    journal: list[dict] = []

    class Journal:
        def append(self, entry: dict) -> None:
            journal.append(entry)

    fake = FakeSummarizer(covered=())
    stored: dict[str, str] = {}
    manager, events, _ = make(
        window=4_096,
        summarize=fake,
        journal=Journal(),
        store_result=lambda i, t: stored.setdefault(i, t) is not None,
    )
    sys_prompt = system("You are Brim, an agent. " * 30)
    history: list[Message] = [
        sys_prompt,
        user("audit the repository: review every file under src/"),
    ]
    read_paths: list[str] = []
    for step in range(60):
        path = f"src/module_{step}.py"
        read_paths.append(path)
        history = [*history, *cycle(ids, 1_600, path=path)]
        prepared = run(manager.prepare(history, overhead_tokens=300))
        assert manager.tokens(prepared.request, 300) <= 4_096
        assert prepared.request[0] is sys_prompt
        assert pairing_ok(prepared.request)
        history = [*prepared.history, assistant(f"read {path}")]
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 2
    assert "<<<PREVIOUS CHECKPOINT" in fake.requests[1].messages[-1].content
    assert len(journal) == len(finished)
    # Every path read before the last compaction is in the checkpoint or still in the tail.
    last = summaries(history)[-1]
    visible = covered_keys(stored_checkpoint(last)) | {
        c.parsed_arguments()["path"] for m in history for c in m.tool_calls
    }
    assert set(read_paths) <= visible
    assert not any(
        isinstance(e, NoticeEvent) and e.level == "warning" and "Trim" in e.text for e in events
    )


def test_a_summarizer_that_fails_again_later_still_tells_the_user_what_trimming_dropped():
    manager, events, _ = make(summarize=FakeSummarizer(error=RuntimeError("boom")))
    ids = Ids()
    first = run(manager.prepare(busy_run(ids, 17)))
    told_first = [e.text for e in events if isinstance(e, NoticeEvent)]
    assert len(told_first) == 2 and "boom" in told_first[-1]  # auto-compacting…, could not
    events.clear()
    msgs = list(first.history)
    for _ in range(8):
        msgs.extend(cycle(ids, 700))
    second = run(manager.prepare(msgs))
    dropped = [e.messages_dropped for e in events if isinstance(e, TrimEvent)]
    assert dropped and dropped[0] == len(msgs) - len(second.history) > 0
    told = [e.text for e in events if isinstance(e, NoticeEvent) and e.level == "warning"]
    assert any("without a summary" in t and str(dropped[0]) in t for t in told), told
