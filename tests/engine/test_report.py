"""The rail's numbers: breakdown, cache shares, freshness, markers, warnings and /usage."""

from __future__ import annotations

from engine.commands import completions, parse_command
from engine.context.budget import ContextBudget
from engine.context.notices import trim_notice
from engine.messages import ToolCall, assistant, notice, system, tool_result, user
from engine.prompt import ProjectInstructions
from engine.report.context_report import (
    CATEGORY_MEMORY,
    CATEGORY_MESSAGES,
    CATEGORY_PROJECT,
    CATEGORY_SYSTEM,
    CATEGORY_TOOLS,
    MARKER_COMPACTION,
    MARKER_TRIM,
    CacheShare,
    ContextReport,
    FillWarnings,
    RequestTracker,
    build_context_report,
    build_usage_report,
    categories,
    compaction_row,
    format_tokens,
    project_block,
    saved_marks,
)
from engine.store.records import MessageRecord, UsageSummary


def _words(text: str) -> int:
    return len(text.split())


def _count(message) -> int:  # type: ignore[no-untyped-def]
    return _words(message.content) + 4


def test_the_breakdown_splits_the_system_prompt_and_lists_tool_results_largest_first():
    project = ProjectInstructions("AGENTS.md", "Use tabs. Run make test.", False)
    prompt = "You are helpful.\n\n" + project_block(project) + "\n\nWorking directory: /w"
    read = ToolCall("c1", "read_file", "{}")
    grep = ToolCall("c2", "search_files", "{}")
    history = [
        system(prompt),
        user("find the bug"),
        assistant("", (read, grep)),
        tool_result(read, "word " * 40),
        tool_result(grep, "hit " * 300),
        tool_result(read, "word " * 10),
        notice("not sent, not counted"),
    ]
    rows = categories(
        history,
        count_message=_count,
        count_text=_words,
        schema_tokens=120,
        framing_tokens=3,
        instructions=[project],
    )
    by_name = {row.name: row.tokens for row in rows}
    assert by_name[CATEGORY_PROJECT] == _words(project_block(project))
    assert by_name[CATEGORY_SYSTEM] == _count(history[0]) - by_name[CATEGORY_PROJECT]
    assert by_name[CATEGORY_TOOLS] == 120
    assert by_name[CATEGORY_MEMORY] == 0
    assert by_name[CATEGORY_MESSAGES] == _count(history[1]) + _count(history[2])
    tools = [row for row in rows if row.tool]
    assert [row.tool for row in tools] == ["search_files", "read_file"]
    assert tools[1].tokens == 44 + 14
    assert sum(row.tokens for row in rows) == sum(map(_count, history[:6])) + 123


def test_a_reported_zero_cache_is_an_alarm_and_silence_is_not_reported():
    cold = CacheShare(0, 900, reported=True)
    silent = CacheShare(0, 900, reported=False)
    assert cold.describe() == "0 read (0% of prompt)" and cold.alarm
    assert silent.describe() == "not reported" and not silent.alarm


def test_a_zero_cache_on_the_first_request_is_no_alarm_and_says_why():
    tracker = RequestTracker()
    tracker.on_usage(2_400, 0)
    tracker.on_context(2_400, 8_192, estimated=False)
    session, last = tracker.cache_shares()
    assert session is not None and last is not None
    assert not session.alarm and not last.alarm
    assert last.describe() == "0 read (first request: nothing to reuse yet)"
    tracker.on_usage(2_500, 0)  # the second request could have reused the first one's prefix
    tracker.on_context(2_500, 8_192, estimated=False)
    session, last = tracker.cache_shares()
    assert session is not None and last is not None
    assert session.alarm and last.alarm


def test_a_zero_cache_on_the_first_request_after_reopening_a_conversation_is_no_alarm():
    tracker = RequestTracker()
    tracker.restore([], [], requests=7)  # a saved conversation of seven requests, reopened
    tracker.on_usage(2_400, 0)  # the engine's cache held the conversation open before
    tracker.on_context(2_400, 8_192, estimated=False)
    session, last = tracker.cache_shares()
    assert session is not None and last is not None
    assert not session.alarm and not last.alarm
    assert last.describe() == "0 read (first request: nothing to reuse yet)"


def test_the_session_cache_share_is_a_share_of_tokens_not_a_mean_of_percentages():
    tracker = RequestTracker()
    tracker.on_usage(10, 0)
    tracker.on_context(10, 8192, estimated=False)
    tracker.on_usage(1000, 900)
    tracker.on_context(1000, 8192, estimated=False)
    report = build_context_report(
        budget=ContextBudget(8192), source="server", estimate=1000, tracker=tracker
    )
    assert report.cache_lines() == [
        "Prompt cache (session): 900 read (89% of prompt)",
        "Prompt cache (last request): 900 read (90% of prompt)",
    ]


def test_no_cache_lines_before_a_request_and_not_reported_once_one_was_measured():
    tracker = RequestTracker()
    budget = ContextBudget(8192)
    before = build_context_report(budget=budget, source="server", estimate=50, tracker=tracker)
    assert before.cache_lines() == []
    tracker.on_usage(300, None)
    tracker.on_context(300, 8192, estimated=False)
    after = build_context_report(budget=budget, source="server", estimate=280, tracker=tracker)
    assert after.cache_lines() == ["Prompt cache: not reported"]


def test_the_engine_count_is_the_headline_until_the_ladder_rewrites_the_history():
    tracker = RequestTracker()
    budget = ContextBudget(8192)
    tracker.on_usage(6000, None)
    tracker.on_context(6000, 8192, estimated=False)
    fresh = build_context_report(budget=budget, source="server", estimate=5800, tracker=tracker)
    assert (fresh.used, fresh.estimated) == (6000, False)
    tracker.on_marker("compaction", "40 -> 9 messages")
    stale = build_context_report(budget=budget, source="server", estimate=2100, tracker=tracker)
    assert (stale.used, stale.estimated) == (2100, True)
    assert stale.markers[0].after == 1 and stale.markers[0].kind == "compaction"


def test_the_headroom_and_marks_come_from_the_budget():
    budget = ContextBudget(128_000)
    tracker = RequestTracker()
    report = build_context_report(budget=budget, source="pinned", estimate=6000, tracker=tracker)
    assert report.headroom_line() == "96,400 tokens available before auto-compact"
    assert (report.warn_at, report.critical_at, report.compact_at) == (89_600, 115_200, 102_400)
    assert report.reserve == 25_600
    reserved = build_context_report(
        budget=ContextBudget(128_000, reserve_tokens=16_384),
        source="pinned",
        estimate=6000,
        tracker=tracker,
    )
    assert reserved.compact_at == 128_000 - 16_384


def test_the_timeline_keeps_one_point_per_request_with_the_window_of_its_time():
    tracker = RequestTracker()
    for used in (1000, 2000, 3000):
        tracker.on_context(used, 4096, estimated=False)
    tracker.on_marker("trim", "3 messages")
    tracker.on_context(1500, 4096, estimated=False)
    assert [p.used for p in tracker.points] == [1000, 2000, 3000, 1500]
    assert [p.request for p in tracker.points] == [1, 2, 3, 4]
    assert [(m.after, m.kind) for m in tracker.markers] == [(3, "trim")]


def test_fill_warnings_fire_once_at_70_and_once_at_90_and_rearm_after_a_drop():
    budget = ContextBudget(10_000)
    warnings = FillWarnings()
    assert warnings.check(6_000, budget) is None
    first = warnings.check(7_200, budget)
    assert first is not None and "72% full" in first and "auto-compact at 80%" in first
    assert warnings.check(7_500, budget) is None
    critical = warnings.check(9_100, budget)
    assert critical is not None and "91% full" in critical
    assert warnings.check(9_300, budget) is None
    assert warnings.check(3_000, budget) is None
    assert warnings.check(7_100, budget) is not None


def test_usage_rows_say_local_engines_have_no_price_and_keep_unreported_cache_apart():
    report = build_usage_report(
        [
            UsageSummary("llamacpp", "qwen", 12, 480_000, 300_000, 21_000),
            UsageSummary("ollama", "llama3", 2, 4_000, None, 500),
        ]
    )
    lines = report.lines()
    assert lines[0] == "session usage"
    assert lines[1] == "llamacpp/qwen 12 req · 480K in (300K cached) · 21K out (no published price)"
    assert lines[2] == "ollama/llama3 2 req · 4K in · 500 out (no published price)"
    assert lines[3] == "total 14 req · 484K in (300K cached) · 22K out (no published price)"
    assert "no price" in lines[4]


def test_the_compaction_row_reads_as_the_seed_prints_it():
    assert compaction_row(84, 31, 96_000, 128_000, "preflight", replaced=60) == (
        "auto-compacted 84 -> 31 messages (ctx 96K/128K)\n"
        "compacted 60 messages into a summary: the prompt neared the context window"
    )
    assert compaction_row(10, 4, 5_000, 8_000, "manual", replaced=7).startswith("compacted 10 -> 4")


def test_token_counts_read_compactly():
    assert [format_tokens(n) for n in (950, 1_150, 43_000, 1_200_000)] == [
        "950",
        "1.1K",
        "43K",
        "1.2M",
    ]


def test_slash_commands_parse_exactly_and_complete_from_a_prefix():
    assert parse_command("  /work   clear ").text == "/work clear"  # type: ignore[union-attr]
    assert parse_command("/contexts") is None
    assert parse_command("please /compact") is None
    assert [c.text for c in completions("/wo")] == ["/work", "/work clear"]
    assert [c.text for c in completions("/work")] == ["/work clear"]
    assert completions("hello") == []


def test_the_session_cache_share_counts_every_request_sent_not_only_those_that_reported():
    # A chat/completions route drops a zero cache counter: that request still sent its
    # prompt, so the session line is cached over every prompt token this process sent.
    tracker = RequestTracker()
    tracker.on_usage(1000, None)
    tracker.on_context(1000, 8192, estimated=False)
    tracker.on_usage(1000, 900)
    tracker.on_context(1000, 8192, estimated=False)
    report = build_context_report(
        budget=ContextBudget(8192), source="server", estimate=1000, tracker=tracker
    )
    assert report.cache_lines() == [
        "Prompt cache (session): 900 read (45% of prompt)",
        "Prompt cache (last request): 900 read (90% of prompt)",
    ]


def test_a_checkpoint_in_the_system_role_counts_as_messages_not_as_the_system_prompt():
    from engine.messages import Message, system
    from engine.report.context_report import CATEGORY_MESSAGES, CATEGORY_SYSTEM, categories

    rows = categories(
        [system("You are Brim."), Message(role="system", content="x " * 40, kind="summary")],
        count_message=lambda m: len(m.content.split()),
        count_text=lambda t: len(t.split()),
    )
    by_name = {row.name: row.tokens for row in rows}
    assert by_name[CATEGORY_SYSTEM] == 3 and by_name[CATEGORY_MESSAGES] == 40


# -- a saved conversation's marks: the meta first, the text for older conversations ----------


def _saved(*messages):  # type: ignore[no-untyped-def]
    return [MessageRecord(seq, m, None) for seq, m in enumerate(messages, start=1)]


def test_saved_marks_read_what_the_ladder_did_from_the_notices_meta():
    # Wording that no pattern would match: the figures come from the meta alone.
    compacted = notice("summarized the older part", "info").with_meta(
        marker=MARKER_COMPACTION, notice_kind="compacted", messages_before=84, messages_after=31
    )
    trimmed = notice("made room", "warning").with_meta(
        marker=MARKER_TRIM, notice_kind="trimmed", messages_dropped=6
    )
    marks = saved_marks(_saved(user("hi"), compacted, trimmed))
    assert [(m.kind, m.detail) for m in marks] == [
        (MARKER_COMPACTION, "84 -> 31 messages"),
        (MARKER_TRIM, "6 messages"),
    ]


def test_saved_marks_of_an_older_conversation_are_read_from_the_notice_text():
    """A database written before notices kept their figures: marker only, figures in text."""
    compacted = notice(
        "auto-compacted 84 -> 31 messages (ctx 96K/128K)\ncompacted 84 messages into a summary",
        "info",
    ).with_meta(marker=MARKER_COMPACTION)
    trimmed = notice(trim_notice(3), "warning").with_meta(marker=MARKER_TRIM)
    fallback = notice(
        "Could not compact (x): trimmed 1 older message instead, discarded without a summary",
        "warning",
    ).with_meta(marker=MARKER_TRIM)
    marks = saved_marks(_saved(compacted, trimmed, fallback))
    assert [(m.kind, m.detail) for m in marks] == [
        (MARKER_COMPACTION, "84 -> 31 messages"),
        (MARKER_TRIM, "3 messages"),
        (MARKER_TRIM, "1 messages"),
    ]


def test_a_saved_notice_without_a_marker_is_no_mark():
    plain = notice(trim_notice(3), "warning")  # the text alone does not make a mark
    assert saved_marks(_saved(plain)) == []


def test_past_the_auto_compact_mark_the_rail_says_the_next_request_is_compacted_first():
    over = ContextReport(window=8192, source="server", used=8438, estimated=True, compact_at=6600)
    assert over.headroom_line() == (
        "Past auto-compact: the next request is compacted before it is sent"
    )
    under = ContextReport(window=8192, source="server", used=3000, estimated=True, compact_at=6600)
    assert under.headroom_line() == "3,600 tokens available before auto-compact"
