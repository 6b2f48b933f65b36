"""The rules that tell a reload between two of Brim's requests, from a table: the final
chunk's load_duration (never 0 on Ollama: milliseconds when the model was loaded) and the
two /api/ps readings around the request."""

from __future__ import annotations

import pytest

from engine.providers.base import LoadedModel
from engine.window.reloads import RELOAD_MIN_S, Reload, reload_seen, reload_text

SENT = 1_000.0  # when the request went out (epoch seconds)
WARM = 0.0013  # a loaded model's load_duration: Ollama's bookkeeping
LOAD = 1.25  # a load's


@pytest.mark.parametrize(
    ("before", "now", "load_s", "expected"),
    [
        # Nothing was loaded before the request, or nothing is now: no reload to tell.
        (None, LoadedModel(4096, SENT + 300), LOAD, None),
        (LoadedModel(4096, SENT + 200), None, WARM, None),
        # Loaded, answered warm, same window: nothing happened.
        (LoadedModel(4096, SENT + 200), LoadedModel(4096, SENT + 300), WARM, None),
        (LoadedModel(4096, SENT + 200), LoadedModel(4096, SENT + 300), None, None),
        # The window changed and Brim's request loaded nothing: another client loaded it.
        (
            LoadedModel(32768, SENT + 200),
            LoadedModel(4096, SENT + 300),
            WARM,
            Reload("another_client", 32768, 4096, None),
        ),
        # Brim's request loaded it while the keep-alive still held it: something else did.
        (
            LoadedModel(8192, SENT + 200),
            LoadedModel(8192, SENT + 300),
            LOAD,
            Reload("another_client", 8192, 8192, LOAD),
        ),
        # The expiry had passed when the request went out: the keep-alive ran out.
        (
            LoadedModel(8192, SENT - 5),
            LoadedModel(8192, SENT + 300),
            LOAD,
            Reload("expired", 8192, 8192, LOAD),
        ),
        # A server that gives no expiry: a load is another client's doing.
        (
            LoadedModel(8192, None),
            LoadedModel(16384, None),
            LOAD,
            Reload("another_client", 8192, 16384, LOAD),
        ),
        # Before v0.10 /api/ps has no window: only a load can tell.
        (LoadedModel(None, SENT + 200), LoadedModel(None, SENT + 300), WARM, None),
    ],
)
def test_a_reload_is_told_from_load_duration_and_the_two_readings(
    before: LoadedModel | None,
    now: LoadedModel | None,
    load_s: float | None,
    expected: Reload | None,
) -> None:
    assert reload_seen(before, now, load_s=load_s, sent_at=SENT) == expected


def test_a_warm_load_duration_is_below_the_reload_line_and_a_load_above_it() -> None:
    assert WARM < RELOAD_MIN_S < 0.5  # the smallest models load in about half a second


def test_the_reload_another_client_made_names_the_window_and_the_new_compaction_point() -> None:
    text = reload_text(
        "qwen3:8b", Reload("another_client", 32768, 4096, None), pinned=None, compacts_at=3276
    )
    assert text == (
        "qwen3:8b was reloaded with a 4,096 window by another client; Brim now compacts at 3,276."
    )


def test_a_pinned_agent_is_told_its_next_request_loads_its_pin_back() -> None:
    text = reload_text(
        "qwen3:8b", Reload("another_client", 8192, 2048, None), pinned=8192, compacts_at=6553
    )
    assert "a 2,048 window by another client" in text and "num_ctx 8,192" in text


def test_a_load_that_came_back_smaller_says_why_an_unpinned_window_shrinks() -> None:
    text = reload_text(
        "qwen3:8b", Reload("expired", 32768, 16384, 2.04), pinned=None, compacts_at=13107
    )
    assert text.startswith("Ollama had unloaded qwen3:8b when its keep-alive ran out")
    assert "2.0 s" in text and "a 16,384 window, not 32,768" in text
    assert "memory is short" in text and text.endswith("Brim now compacts at 13,107.")
