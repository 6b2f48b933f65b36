"""The rules that decide whether a window drawn from an overflow error is believed, from a
table (engine/window/vetting.py): the floor, the request's own count, a window no model has,
what the engine reports when asked again, and a later answer that contradicts the lesson."""

from __future__ import annotations

import pytest

from engine.providers.errors import ContextOverflow
from engine.window.learning import WindowLesson
from engine.window.vetting import against_report, contradicted, doubt_overflow, doubt_text

EXACT = 0.03


def _overflow(prompt: int | None, window: int | None) -> ContextOverflow:
    return ContextOverflow("too long", status=400, prompt_tokens=prompt, window=window)


@pytest.mark.parametrize(
    ("lesson", "prompt", "named", "sent", "fixed", "reason"),
    [
        # n_ctx 300 with tools: below the prefix every request carries.
        (WindowLesson(300, "server", "overflow"), 1800, 300, 1800, 1700, "below_fixed_prefix"),
        # n_ctx 300 without tools: a 70-token request cannot overflow a 300-token window.
        (WindowLesson(300, "server", "overflow"), 70, 300, 70, 50, "request_smaller"),
        # 2,000 beside a trillion: a window no model has.
        (
            WindowLesson(2000, "observed", "rejected_below_report"),
            2000,
            10**12,
            1800,
            1700,
            "absurd_window",
        ),
        # The error's prompt is not the request Brim sent.
        (
            WindowLesson(2000, "observed", "rejected_below_report"),
            2000,
            8192,
            5200,
            1700,
            "count_disagrees",
        ),
        # What a real llama-server says: believed.
        (WindowLesson(4096, "server", "overflow"), 4100, 4096, 4100, 1700, None),
        (WindowLesson(3100, "observed", "rejected_below_report"), 3100, 8192, 3090, 1700, None),
    ],
)
def test_an_overflow_lesson_is_doubted_for_the_reason_the_figures_give(
    lesson, prompt, named, sent, fixed, reason
):
    doubt = doubt_overflow(
        lesson,
        _overflow(prompt, named),
        sent=sent,
        needed=sent,
        tolerance=EXACT,
        fixed_tokens=fixed,
    )
    assert (doubt.reason if doubt else None) == reason


def test_a_named_window_the_report_contradicts_gives_way_to_the_size_rejected():
    lesson, doubt = against_report(
        WindowLesson(3000, "server", "overflow"), 8192, current=8192, rejected=3050
    )
    assert doubt is not None and (doubt.reason, doubt.evidence) == ("engine_reports", 8192)
    assert lesson == WindowLesson(3050, "observed", "rejected_below_report")


def test_a_named_window_the_report_confirms_is_believed():
    lesson = WindowLesson(4096, "server", "overflow")
    assert against_report(lesson, 4096, current=8192, rejected=4100) == (lesson, None)


def test_a_smaller_report_explains_a_rejection_and_is_learned_from_the_report():
    lesson, doubt = against_report(
        WindowLesson(5000, "observed", "rejected_below_report"), 4096, current=8192
    )
    assert doubt is None and lesson == WindowLesson(4096, "server", "reported")


@pytest.mark.parametrize(
    ("cause", "answered", "dropped"),
    [
        ("rejected_below_report", 3101, True),
        ("rejected_below_report", 3100, False),
        ("overflow", 5000, True),
        ("truncation", 4000, True),
        ("loaded", 9000, False),  # the engine's own report is not provisional
    ],
)
def test_a_provisional_window_is_dropped_only_by_a_larger_answered_request(
    cause, answered, dropped
):
    assert contradicted(WindowLesson(3100, "observed", cause), answered) is dropped


def test_the_doubt_notice_names_the_figure_where_it_came_from_and_why():
    doubt = doubt_overflow(
        WindowLesson(300, "server", "overflow"),
        _overflow(1800, 300),
        sent=1800,
        needed=1800,
        tolerance=EXACT,
        fixed_tokens=1700,
    )
    assert doubt is not None
    text = doubt_text("llama-server", doubt, 8192)
    assert "300-token window" in text and "overflow error" in text
    assert "1,700 tokens of system prompt and tool schemas" in text
    assert "keeps accounting against 8,192" in text
