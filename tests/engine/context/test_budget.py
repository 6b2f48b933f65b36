import pytest

from engine.context.budget import ContextBudget, overflow_trim_budget, recent_tail_tokens


def test_the_thresholds_of_a_128k_window_follow_the_seed_ratios():
    b = ContextBudget(128_000)
    assert (b.clear_threshold, b.warn_threshold, b.critical_threshold) == (64_000, 89_600, 115_200)
    assert b.compact_threshold == 102_400
    assert b.trim_threshold == 121_600


def test_a_compaction_reserve_wins_over_the_ratio():
    b = ContextBudget(128_000, compaction_ratio=0.6, reserve_tokens=16_384)
    assert b.compact_threshold == 128_000 - 16_384


def test_a_provider_ratio_moves_the_compaction_threshold():
    assert ContextBudget(10_000, compaction_ratio=0.6).compact_threshold == 6_000


def test_trimming_never_fires_before_compaction_even_with_a_tiny_reserve():
    b = ContextBudget(100_000, reserve_tokens=1_000)
    assert b.trim_threshold >= b.compact_threshold == 99_000


def test_the_recent_tail_is_a_fifth_of_the_window_clamped_to_8k_and_40k():
    assert recent_tail_tokens(128_000) == 25_600
    assert recent_tail_tokens(1_000_000) == 40_000
    assert recent_tail_tokens(32_000) == 8_000
    assert recent_tail_tokens(36_000) == 8_000


def test_under_32k_the_tail_floor_is_a_quarter_of_the_window():
    assert recent_tail_tokens(16_000) == 4_000
    assert recent_tail_tokens(4_096) == 1_024


def test_usage_reports_every_flag_from_one_count():
    b = ContextBudget(1_000)
    assert not b.usage(500).clear_due
    low = b.usage(501)
    assert low.clear_due and not low.warn
    warn = b.usage(701)
    assert warn.warn and not warn.critical and not warn.compact_due
    assert b.usage(800).compact_due
    crit = b.usage(901)
    assert crit.critical and not crit.trim_due
    over = b.usage(951)
    assert over.trim_due and not over.over_window
    assert b.usage(1_001).over_window
    assert b.usage(830).percent == pytest.approx(83.0)


def test_headroom_counts_down_to_the_compaction_threshold():
    b = ContextBudget(1_000)
    assert b.headroom(300) == 500
    assert b.headroom(900) == 0


def test_an_impossible_reserve_or_ratio_is_refused():
    with pytest.raises(ValueError):
        ContextBudget(8_000, reserve_tokens=8_000)
    with pytest.raises(ValueError):
        ContextBudget(8_000, compaction_ratio=1.5)
    with pytest.raises(ValueError):
        ContextBudget(0)


def test_an_overflow_trims_to_seventy_percent_of_the_history():
    assert overflow_trim_budget(10_000) == 7_000
