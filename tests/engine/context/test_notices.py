from engine.context.notices import (
    compacted_notice,
    compaction_fallback_notice,
    compaction_reason_line,
    preflight_notice,
    trim_notice,
)
from engine.report.context_report import compaction_row


def test_the_preflight_notice_reads_exactly_as_the_seed_prints_it():
    assert (
        preflight_notice(100_046, 120_000)
        == "Context window ~83% full (~100,046 of 120,000 tokens): auto-compacting…"
    )


def test_the_compacted_notice_reads_exactly_as_the_seed_prints_it():
    assert compacted_notice(64, 12, 48_000) == "Compacted 64 → 12 messages (saved ~48000 tokens)"


def test_the_transcript_rows_read_exactly_as_seed_003_prints_them():
    assert compaction_row(84, 31, 96_000, 128_000, "preflight", replaced=60) == (
        "auto-compacted 84 -> 31 messages (ctx 96K/128K)\n"
        "compacted 60 messages into a summary: the prompt neared the context window"
    )


def test_a_compaction_the_agent_asked_for_is_not_put_on_the_user():
    assert compaction_row(9, 4, 3_000, 8_000, "manual", replaced=6).endswith(": you asked for it")
    assert compaction_row(9, 4, 3_000, 8_000, "manual", replaced=6, asked_by_agent=True).endswith(
        ": the agent asked for it (summarize_context)"
    )


def test_every_compaction_reason_has_its_own_explanation():
    lines = {
        compaction_reason_line(3, r)
        for r in ("preflight", "context_overflow", "session_budget", "manual")
    }
    assert len(lines) == 4
    assert "token budget" in compaction_reason_line(3, "session_budget")
    assert "too long for the engine" in compaction_reason_line(3, "context_overflow")


def test_the_user_is_told_when_messages_are_discarded_without_a_summary():
    assert "without a summary" in trim_notice(12)
    assert trim_notice(1).startswith("Trimmed 1 older message ")
    text = compaction_fallback_notice("the summary was empty", 7)
    assert "the summary was empty" in text and "7 older messages" in text
