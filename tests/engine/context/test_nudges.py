from engine.context.budget import ContextBudget
from engine.context.nudges import (
    IterationPressure,
    context_nudge,
    iteration_nudge,
    pressure_message,
)


def usage(used: int, window: int = 1_000):
    return ContextBudget(window).usage(used)


def test_below_seventy_percent_the_model_gets_no_context_line():
    assert context_nudge(usage(700)) is None


def test_past_seventy_percent_the_model_is_told_to_consolidate():
    line = context_nudge(usage(710))
    assert line.startswith("[CONTEXT WARNING:") and "71%" in line
    assert "consolidate" in line


def test_past_ninety_percent_the_model_is_told_to_write_its_output_now():
    line = context_nudge(usage(910))
    assert line.startswith("[CONTEXT CRITICAL:") and "now" in line


def test_after_a_compaction_the_wrap_up_lines_are_replaced_by_a_resume_line():
    line = context_nudge(usage(300), just_compacted=True)
    assert line.startswith("[CONTEXT COMPACTED:")
    assert "fully complete" in line
    assert "WARNING" not in line and "CRITICAL" not in line


def test_a_compaction_that_leaves_context_tight_says_so_but_never_says_stop():
    line = context_nudge(usage(950), just_compacted=True)
    assert line.startswith("[CONTEXT COMPACTED:") and "still tight" in line
    assert "stop" not in line.lower() and "now" not in line.lower()


def test_iteration_nudges_fire_at_seventy_and_ninety_percent_of_the_cap():
    assert iteration_nudge(69, 100) is None
    assert iteration_nudge(70, 100).startswith("[ITERATION WARNING:")
    assert iteration_nudge(90, 100).startswith("[ITERATION CRITICAL:")
    assert iteration_nudge(99, None) is None
    assert iteration_nudge(99, float("inf")) is None


def test_several_lines_are_merged_into_one_appended_message():
    msg = pressure_message([context_nudge(usage(950)), None, iteration_nudge(95, 100)])
    assert msg is not None and msg.role == "user"
    assert "[CONTEXT CRITICAL:" in msg.content and "[ITERATION CRITICAL:" in msg.content
    assert msg.meta_value("ephemeral") is True
    assert pressure_message([None, None]) is None


def test_iteration_pressure_fires_once_per_threshold_with_the_seed_text():
    ramp = IterationPressure(100)
    fired = [ramp.check(i) for i in range(1, 100)]
    lines = [f for f in fired if f]
    assert lines == [
        "iteration budget 50% used (50/100) - run stops at the limit, "
        "type 'continue' to keep it going",
        "iteration budget 70% used (70/100) - run stops at the limit, "
        "type 'continue' to keep it going",
        "iteration budget 90% used (90/100) - run stops at the limit, "
        "type 'continue' to keep it going",
    ]


def test_a_step_that_crosses_two_thresholds_reports_only_the_highest():
    ramp = IterationPressure(10)
    first = ramp.check(8)
    assert first is not None and first.startswith("iteration budget 70% used (8/10)")
    assert ramp.check(8) is None
    assert ramp.check(9).startswith("iteration budget 90% used (9/10)")


def test_a_run_without_a_cap_never_warns():
    for ramp in (IterationPressure(None), IterationPressure(float("inf"))):
        assert [ramp.check(i) for i in range(1, 50)] == [None] * 49


def test_continue_starts_the_ramp_over():
    ramp = IterationPressure(10)
    assert ramp.check(5)
    ramp.reset()
    assert ramp.check(5)
