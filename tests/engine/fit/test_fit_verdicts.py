"""The verdict and the largest window that stays on the GPU, against a given free figure."""

from __future__ import annotations

import pytest

from engine.fit.estimate import FitRequest, estimate, max_num_ctx_on_gpu
from engine.fit.facts import ModelFacts
from engine.fit.report import read_facts
from engine.providers.bundled_models import SMOLLM2, model_file

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def smollm2() -> ModelFacts:
    path = model_file(SMOLLM2)
    if path is None:
        pytest.skip("the bundled SmolLM2 is not installed")
    return read_facts(str(path))


def test_a_pin_that_fits_the_free_memory_fits_on_the_gpu(smollm2: ModelFacts) -> None:
    e = estimate(smollm2, FitRequest(4096), gpu_free=1024 * MIB, ram=8192 * MIB)
    assert e.verdict == "fits_on_gpu"
    assert e.gpu_bytes <= 1024 * MIB


def test_a_pin_past_the_free_memory_spills_to_the_cpu(smollm2: ModelFacts) -> None:
    e = estimate(smollm2, FitRequest(8192), gpu_free=200 * MIB, ram=8192 * MIB)
    assert e.gpu_bytes > 200 * MIB
    assert e.verdict == "spills_to_cpu"


def test_a_pin_past_gpu_and_ram_together_does_not_fit(smollm2: ModelFacts) -> None:
    e = estimate(smollm2, FitRequest(8192), gpu_free=100 * MIB, ram=100 * MIB)
    assert e.verdict == "does_not_fit"


def test_fewer_gpu_layers_than_all_is_a_chosen_spill(smollm2: ModelFacts) -> None:
    e = estimate(smollm2, FitRequest(4096, gpu_layers=10), gpu_free=1024 * MIB, ram=8192 * MIB)
    assert e.verdict == "spills_to_cpu"
    assert 0 < e.kv_gpu_bytes < e.kv_bytes  # the KV cache follows its layers


def test_unknown_free_memory_gives_no_verdict_and_no_largest_window(smollm2: ModelFacts) -> None:
    e = estimate(smollm2, FitRequest(4096), gpu_free=None, ram=8192 * MIB)
    assert e.verdict == "unknown"
    assert set(e.max_num_ctx_on_gpu.values()) == {None}


def test_the_largest_window_on_the_gpu_is_the_last_one_that_fits(smollm2: ModelFacts) -> None:
    free = 150 * MIB  # below the training length for every KV type
    e = estimate(smollm2, FitRequest(8192), gpu_free=free, ram=8192 * MIB)
    largest = e.max_num_ctx_on_gpu
    assert largest["f16"] is not None and largest["q8_0"] is not None and largest["q4_0"]
    assert largest["f16"] < largest["q8_0"] < largest["q4_0"]  # a smaller cache, a wider window
    for kv_type, n in largest.items():
        assert n is not None
        at = estimate(smollm2, FitRequest(n, kv_type), gpu_free=free, ram=None)
        past = estimate(smollm2, FitRequest(n + 256, kv_type), gpu_free=free, ram=None)
        assert at.gpu_bytes <= free < past.gpu_bytes


def test_the_largest_window_stops_at_the_training_length(smollm2: ModelFacts) -> None:
    assert max_num_ctx_on_gpu(smollm2, FitRequest(4096), 64 * 1024 * MIB) == 8192
