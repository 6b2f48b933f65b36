"""The KV cache llama.cpp allocates, by its own rules (src/llama-context.cpp,
src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp):

- the window is padded to 256 cells; with separate slots (`-np N` without a unified cache)
  each slot gets `window / N` cells, padded to 256 again, in its own stream;
- a layer keeps `key_length × head_count_kv` keys and `value_length × head_count_kv` values
  per cell, each row `ggml_row_size` bytes of the KV type (f16: 2 per element; q8_0: 34 per
  32; q4_0: 18 per 32);
- sliding-window layers live in a second cache of `pad256(min(cells, window × (slots when
  unified, else 1) + n_ubatch))` cells per stream, or as many as the full cache where the
  context asks for a full-size one (`swa_full`: llama.cpp's library default, which
  llama-cpp-python keeps; llama-server turns it off).
"""

from __future__ import annotations

from dataclasses import dataclass

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

from engine.fit.facts import ModelFacts

KV_TYPES = ("f16", "q8_0", "q4_0")
CELL_PAD = 256
DEFAULT_UBATCH = 512


def row_bytes(kv_type: str, n: int) -> int:
    """`ggml_row_size(type, n)`: the bytes of one row of `n` elements."""
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType[kv_type.upper()]]
    return n // block * size


def _pad(n: int, to: int = CELL_PAD) -> int:
    return -(-n // to) * to


@dataclass(frozen=True)
class KvLayout:
    cells: int  # per stream, in the full-attention cache
    swa_cells: int  # per stream, in the sliding-window cache (0: none)
    streams: int


def kv_layout(
    facts: ModelFacts, num_ctx: int, slots: int = 1, *, unified: bool = False,
    n_ubatch: int = DEFAULT_UBATCH, swa_full: bool = False,
) -> KvLayout:  # fmt: skip
    n_ctx = _pad(max(num_ctx, 1))
    slots = max(slots, 1)
    if unified or slots == 1:
        cells, streams = n_ctx, 1
    else:
        cells, streams = _pad(n_ctx // slots), slots
    swa = 0
    if facts.sliding_window and swa_full:
        swa = cells
    elif facts.sliding_window:
        swa = _pad(min(cells, facts.sliding_window * (slots if unified else 1) + n_ubatch))
    return KvLayout(cells, swa, streams)


def kv_layer_bytes(
    facts: ModelFacts, layout: KvLayout, kv_type_k: str = "f16", kv_type_v: str | None = None
) -> tuple[int, ...]:
    """The KV bytes of each layer (0 for a layer without attention)."""
    kv_type_v = kv_type_v or kv_type_k
    out = []
    for il in range(facts.n_layer):
        heads = facts.kv_heads[il]
        if heads <= 0:
            out.append(0)
            continue
        cells = layout.swa_cells if facts.swa_layers[il] else layout.cells
        per_cell = row_bytes(kv_type_k, facts.key_length[il] * heads) + row_bytes(
            kv_type_v, facts.value_length[il] * heads
        )
        out.append(per_cell * cells * layout.streams)
    return tuple(out)


def kv_bytes(
    facts: ModelFacts, num_ctx: int, kv_type: str = "f16", slots: int = 1, *,
    unified: bool = False,
) -> int:  # fmt: skip
    """All the KV cache llama.cpp allocates for this window, type and slot count."""
    return sum(kv_layer_bytes(facts, kv_layout(facts, num_ctx, slots, unified=unified), kv_type))
