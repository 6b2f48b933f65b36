"""What each piece of evidence teaches about the window, and when a shortfall is a cut: the
pure rules under the loop, one table each, plus the invariants as properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.providers.errors import ContextOverflow
from engine.providers.ollama_version import counts_whole_prompt, parse_version
from engine.window.learning import (
    apply,
    from_loaded,
    from_overflow,
    from_truncation,
    learned_text,
)
from engine.window.resolution import WindowResolution
from engine.window.truncation import CountError, silently_truncated


def resolution(
    window: int, source: str = "server", *, pinned: int | None = None, provider: str = "ollama"
) -> WindowResolution:
    return WindowResolution(
        provider=provider,
        model="m",
        window=window,
        source=source,  # type: ignore[arg-type]
        served=window if source == "server" else None,
        model_max=131072,
        pinned=pinned,
        ceiling=None,
        slots=None,
    )


# --- /api/ps after the first answer ---------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "loaded", "learned"),
    [
        (resolution(4096, "assumed"), 4096, 4096),  # confirmed: said, though the same number
        (resolution(4096, "assumed"), 32768, 32768),
        (resolution(131072, "fallback"), 2048, 2048),
        (resolution(8192, "server"), 8192, None),  # nothing new
        (resolution(8192, "pinned", pinned=8192), 16384, None),  # another client; reloaded back
        (resolution(8192, "pinned", pinned=8192), 6144, 6144),  # Ollama stepped the load down
        (resolution(4096, "assumed"), None, None),  # not loaded, or /api/ps without the field
        (resolution(4096, "assumed"), 10**12, None),  # absurd: never believed
    ],
)
def test_the_loaded_window_is_learned_when_it_says_something_new(current, loaded, learned):
    lesson = from_loaded(current, loaded)
    assert (lesson.window if lesson else None) == learned


# --- overflow errors ------------------------------------------------------------------------


def overflow(prompt: int | None, window: int | None) -> ContextOverflow:
    return ContextOverflow("too long", status=400, prompt_tokens=prompt, window=window)


@pytest.mark.parametrize(
    ("engine", "current", "error", "sent", "learned"),
    [
        ("llamacpp", 100_000, overflow(2014, 1500), 2000, (1500, "server")),  # n_ctx named
        ("llamacpp", 8192, overflow(3134, 8192), 3000, (3134, "observed")),  # below the report
        ("llamacpp", 8192, overflow(None, None), 5000, (5000, "observed")),  # old build: no numbers
        ("llamacpp", 4096, overflow(5000, 4096), 5000, None),  # above the window: nothing new
        ("vllm", 4096, overflow(2778, 4096), 2778, None),  # prompt + max_tokens: not the window
        ("vllm", 32768, overflow(9000, 8192), 9000, (8192, "server")),
        ("sglang", 131072, overflow(None, None), 5000, None),
    ],
)
def test_an_overflow_teaches_the_window_it_shows(engine, current, error, sent, learned):
    lesson = from_overflow(resolution(current, provider=engine), error, sent=sent, engine=engine)
    assert ((lesson.window, lesson.source) if lesson else None) == learned


def test_a_cut_teaches_the_window_only_where_no_engine_figure_stands():
    assert from_truncation(resolution(4096, "assumed"), 2040).window == 2040
    assert from_truncation(resolution(4096, "server"), 2040) is None
    assert from_truncation(resolution(8192, "pinned", pinned=8192), 7000) is None
    assert from_truncation(resolution(4096, "assumed"), 5000) is None


def test_a_lesson_applied_moves_window_and_source_and_keeps_the_rest():
    current = resolution(4096, "assumed")
    learned = apply(current, from_loaded(current, 8192))  # type: ignore[arg-type]
    assert (learned.window, learned.source, learned.served) == (8192, "server", 8192)
    assert (learned.model_max, learned.model) == (current.model_max, current.model)


# --- truncation evidence --------------------------------------------------------------------


def test_a_fifteen_percent_overestimate_of_a_prompt_below_the_window_is_not_a_cut():
    assert not silently_truncated(1150, 1000, window=4096, error=CountError())
    calibrated = CountError()
    calibrated.observe(1150, 1000)
    assert not silently_truncated(4600, 4000, window=4096, error=calibrated)


def test_a_prompt_far_above_the_window_read_as_the_window_is_a_cut():
    assert silently_truncated(9000, 4090, window=4096, error=CountError())


def test_an_exact_count_flags_a_small_cut_a_heuristic_must_not():
    assert silently_truncated(4400, 4090, window=4096, error=CountError(exact=True))
    assert not silently_truncated(4400, 4090, window=4096, error=CountError())


def test_a_report_above_the_window_is_never_a_cut():
    assert not silently_truncated(20000, 5000, window=4096, error=CountError(exact=True))


@given(
    true_prompt=st.integers(min_value=300, max_value=200_000),
    window=st.integers(min_value=512, max_value=131072),
    error=st.floats(min_value=0.0, max_value=0.2),
    overestimate=st.floats(min_value=-1.0, max_value=1.0),
)
def test_no_prompt_that_fit_is_ever_flagged_while_the_count_stays_within_its_measured_error(
    true_prompt, window, error, overestimate
):
    """Ollama only cuts a prompt above its window: a prompt that fit, counted within the
    error Brim has measured, is never called a cut, whatever the content did to the count."""
    if true_prompt > window:
        return
    measured = CountError()
    measured.observe(round(1000 * (1 + error)), 1000)
    counted = round(true_prompt * (1 + overestimate * measured.tolerance * 0.99))
    assert not silently_truncated(counted, true_prompt, window=window, error=measured)


# --- what Ollama's prompt_eval_count means ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("0.33.0", True),
        ("0.30.1", True),
        ("0.30.1-rc0", True),
        ("0.30.0", False),
        ("0.30.0-rc12", False),
        ("0.24.0", True),
        ("0.12.6", True),
        ("0.5.7", True),
        ("v0.31.0-rc1", True),
        ("0.0.0", True),  # a dev build says nothing: assume current
        (None, True),
        ("nightly", True),
    ],
)
def test_prompt_eval_count_leaves_out_the_cached_prefix_only_on_0_30_0(text, whole):
    assert counts_whole_prompt(parse_version(text)) is whole


@pytest.mark.parametrize(
    ("window", "line"),
    [
        (4096, "Ollama loaded m with a 4,096-token window; Brim now compacts at 100."),
        (8192, "Ollama loaded m with an 8,192-token window; Brim now compacts at 100."),
        (11000, "Ollama loaded m with an 11,000-token window; Brim now compacts at 100."),
        (131072, "Ollama loaded m with a 131,072-token window; Brim now compacts at 100."),
    ],
)
def test_the_transcript_line_names_engine_model_window_and_compaction_point(window, line):
    current = resolution(4096, "assumed")
    lesson = from_loaded(current, window)
    assert lesson is not None
    assert learned_text(current, lesson, compacts_at=100) == line


def test_a_loaded_window_above_the_agents_ceiling_is_accounted_at_the_ceiling():
    current = WindowResolution(
        provider="ollama",
        model="m",
        window=4096,
        source="assumed",
        served=None,
        model_max=131072,
        pinned=None,
        ceiling=60000,
        slots=None,
    )
    lesson = from_loaded(current, 131072)
    assert lesson is not None and (lesson.window, lesson.source) == (60000, "ceiling")
    assert learned_text(current, lesson, compacts_at=48000) == (
        "Ollama loaded m with a 131,072-token window; the agent's max_context_tokens keeps "
        "Brim at 60,000, and it compacts at 48,000."
    )
    assert from_loaded(apply(current, lesson), 131072) is None  # said once
