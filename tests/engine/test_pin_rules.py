"""The rules behind "a pin honoured, or loudly refused" and the fit policy, from tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.window.fit_policy import spill_act
from engine.window.pin_check import llamacpp_refusal, ollama_refusal


@pytest.mark.parametrize(
    ("asked", "per_slot", "slots", "unified", "model_max", "cause"),
    [
        (4096, 2048, 2, False, 8192, "parallel_split"),  # -c 4096 -np 2
        (8192, 2048, 4, False, 32768, "parallel_split"),  # -c 8192 -np 4
        (8192, 2048, 2, False, 32768, "unknown"),  # the two slots hold 4,096: -c is smaller
        (8192, 4096, 4, True, 32768, "unknown"),  # a unified pool: each slot may use it all
        (16384, 8192, 1, False, 8192, "training_length"),
        (4096, 2048, 1, False, 8192, "unknown"),  # a smaller -c, or --fit: not told apart
        (4096, 2048, None, False, None, "unknown"),
    ],
)
def test_llama_server_causes_are_named_only_where_its_answers_tell_them_apart(
    asked: int,
    per_slot: int,
    slots: int | None,
    unified: bool,
    model_max: int | None,
    cause: str,
) -> None:
    refused = llamacpp_refusal(asked, per_slot, slots=slots, unified=unified, model_max=model_max)
    assert refused is not None
    assert (refused.asked, refused.allocated, refused.cause) == (asked, per_slot, cause)


@pytest.mark.parametrize(
    ("asked", "loaded", "model_max", "cause"),
    [
        (16384, 8192, 8192, "training_length"),
        (16384, 8192, None, "unknown"),  # /api/show gave no training length
        (16384, 4096, 8192, "unknown"),  # not the cap: Ollama does not say
    ],
)
def test_ollama_causes_for_a_pin_it_was_sent(
    asked: int, loaded: int, model_max: int | None, cause: str
) -> None:
    refused = ollama_refusal(asked, loaded, model_max=model_max)
    assert refused is not None and refused.cause == cause


@given(
    asked=st.integers(256, 1 << 20),
    held=st.integers(1, 1 << 21),
    slots=st.none() | st.integers(1, 16),
    unified=st.booleans(),
)
def test_a_window_at_least_the_pin_is_never_a_refusal_and_a_smaller_one_always_is(
    asked: int, held: int, slots: int | None, unified: bool
) -> None:
    by_server = llamacpp_refusal(asked, held, slots=slots, unified=unified, model_max=None)
    by_ollama = ollama_refusal(asked, held, model_max=None)
    if held >= asked:
        assert by_server is None and by_ollama is None
    else:
        assert by_server is not None and by_server.allocated == held
        assert by_ollama is not None and by_ollama.allocated == held


SPILL = {"cpu_percent": 23, "num_ctx": 40960, "fits_num_ctx": 32768}


@pytest.mark.parametrize(
    ("policy", "pin", "details", "action"),
    [
        ("warn", 40960, SPILL, "warn"),
        ("shrink", 40960, SPILL, "shrink"),
        ("ask", 40960, SPILL, "ask"),
        ("shrink", None, SPILL, "warn"),  # no pin to lower
        ("shrink", 8192, SPILL, "warn"),  # spilled at another client's window, not the pin
        ("ask", 40960, {"cpu_percent": 23, "num_ctx": 40960}, "warn"),  # nothing known fits
        ("shrink", 40960, {**SPILL, "fits_num_ctx": 40960}, "warn"),  # no smaller window
    ],
)
def test_the_fit_policy_acts_only_on_a_spill_at_the_pin_with_a_window_that_fits(
    policy: str, pin: int | None, details: dict[str, int | str], action: str
) -> None:
    assert spill_act(policy, pin, details).action == action
