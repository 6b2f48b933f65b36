"""The KV cache arithmetic, as tables: llama.cpp's padding, slots, KV types and windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fit.facts import model_facts
from engine.fit.header import read_header
from engine.fit.kv import kv_bytes, kv_layout, row_bytes
from tests.helpers.tiny_gguf import write_tiny_gguf


@pytest.mark.parametrize(
    ("kv_type", "n", "expected"),
    [("f16", 192, 384), ("q8_0", 192, 204), ("q4_0", 192, 108), ("q8_0", 256, 272)],
)
def test_a_kv_row_costs_what_ggml_row_size_says(kv_type: str, n: int, expected: int) -> None:
    assert row_bytes(kv_type, n) == expected


def _facts(tmp_path: Path, **kw: object):  # type: ignore[no-untyped-def]
    return model_facts(read_header(str(write_tiny_gguf(tmp_path / "m.gguf", **kw))))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("num_ctx", "slots", "cells", "streams"),
    [
        (4096, 1, 4096, 1),
        (3000, 1, 3072, 1),
        (5000, 2, 2560, 2),
        (16384, 4, 4096, 4),
        (100, 3, 256, 3),
    ],
)
def test_the_window_is_padded_and_split_as_llama_cpp_splits_it(
    tmp_path: Path, num_ctx: int, slots: int, cells: int, streams: int
) -> None:
    layout = kv_layout(_facts(tmp_path), num_ctx, slots)
    assert (layout.cells, layout.streams) == (cells, streams)


def test_a_dense_model_costs_layers_times_heads_times_lengths_times_cells(tmp_path: Path) -> None:
    facts = _facts(tmp_path, n_layer=4, n_embd=64, n_head=4, head_count_kv=2)
    # head length 64 / 4 = 16; 2 KV heads: 32 elements of K and of V per layer and cell
    assert kv_bytes(facts, 4096, "f16") == 4 * 4096 * (32 * 2) * 2
    assert kv_bytes(facts, 4096, "q8_0") == 4 * 4096 * (32 // 32 * 34) * 2
    assert kv_bytes(facts, 4096, "q4_0") == 4 * 4096 * (32 // 32 * 18) * 2


def test_layers_without_kv_heads_keep_no_cache(tmp_path: Path) -> None:
    facts = _facts(tmp_path, n_layer=4, head_count_kv=[2, 0, 4, 0])
    assert kv_bytes(facts, 1024, "f16") == 1024 * (2 + 4) * 16 * 2 * 2


def test_sliding_window_layers_hold_only_their_window(tmp_path: Path) -> None:
    facts = _facts(tmp_path, arch="gemma3", n_layer=12, sliding_window=512, key_length=32)
    assert facts.swa_layers == tuple(il % 6 < 5 for il in range(12))  # layers 5 and 11 dense
    layout = kv_layout(facts, 32768, 1)
    assert (layout.cells, layout.swa_cells) == (32768, 1024)  # pad256(512 + 512 ubatch)
    per_cell = 2 * 32 * 2 * 2  # 2 KV heads of 32, K and V, f16
    assert kv_bytes(facts, 32768, "f16") == 2 * 32768 * per_cell + 10 * 1024 * per_cell


def test_a_small_window_caps_the_sliding_cache_at_the_window(tmp_path: Path) -> None:
    facts = _facts(tmp_path, arch="gemma3", n_layer=6, sliding_window=4096, key_length=32)
    layout = kv_layout(facts, 2048, 1)
    assert layout.swa_cells == 2048


def test_a_unified_pool_widens_the_sliding_cache_by_the_slot_count(tmp_path: Path) -> None:
    facts = _facts(tmp_path, arch="gemma3", n_layer=6, sliding_window=512, key_length=32)
    layout = kv_layout(facts, 32768, 4, unified=True)
    assert (layout.cells, layout.swa_cells, layout.streams) == (32768, 2560, 1)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from engine.fit.estimate import FitRequest, estimate, max_num_ctx_on_gpu  # noqa: E402


@pytest.fixture(scope="module")
def swa_facts(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("m") / "g.gguf"
    write_tiny_gguf(path, arch="gemma3", n_layer=12, sliding_window=512, key_length=32,
                    context_length=131072)  # fmt: skip
    return model_facts(read_header(str(path)))


@settings(max_examples=60, deadline=None)
@given(
    num_ctx=st.integers(1, 200_000),
    more=st.integers(0, 50_000),
    slots=st.integers(1, 8),
    kv_type=st.sampled_from(["f16", "q8_0", "q4_0"]),
)
def test_a_wider_window_never_costs_less_and_never_less_than_its_cells(
    swa_facts,
    num_ctx: int,
    more: int,
    slots: int,
    kv_type: str,  # type: ignore[no-untyped-def]
) -> None:
    small = kv_bytes(swa_facts, num_ctx, kv_type, slots)
    assert kv_bytes(swa_facts, num_ctx + more, kv_type, slots) >= small
    layout = kv_layout(swa_facts, num_ctx, slots)
    assert layout.cells * layout.streams >= num_ctx  # every token of the window has a cell


@settings(max_examples=40, deadline=None)
@given(free=st.integers(0, 1 << 31), kv_type=st.sampled_from(["f16", "q8_0", "q4_0"]))
def test_the_largest_window_on_the_gpu_fits_and_one_step_more_does_not(
    swa_facts,
    free: int,
    kv_type: str,  # type: ignore[no-untyped-def]
) -> None:
    request = FitRequest(4096, kv_type)
    largest = max_num_ctx_on_gpu(swa_facts, request, free)
    if largest:
        assert estimate(swa_facts, request.at(largest), gpu_free=free, ram=None).gpu_bytes <= free
    if largest < 131072:
        past = estimate(swa_facts, request.at(largest + 256), gpu_free=free, ram=None)
        assert past.gpu_bytes > free
