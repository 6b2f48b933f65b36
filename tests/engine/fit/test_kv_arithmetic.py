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
