"""An allowance for llama.cpp's compute buffers, measured rather than derived.

The buffers hold one micro-batch's activations and, for the attention, a mask over every
cell (flash attention: f16) or the full score matrix (without it: f32 per query head).
Measured with llama-server on this project's two bundled models (SmolLM2 135M, Gemma 3 270M;
windows 2,048 to 32,768, f16/q8_0/q4_0, one to four slots; `CPU compute buffer size`):

    flash attention on:   n_ubatch × (20 × n_ff + 2 × cells)         bytes, +0.7..2.2 %
    flash attention off:  n_ubatch × (20 × n_ff + (4 × heads + 4) × cells), +4..17 %

plus the logits of one token per slot (`output buffer`, 4 × n_vocab each).

llama-cpp-python (the embedded engine) reserves logits for every position of a micro-batch,
which then dominates (SmolLM2 at 2,048: 99.4 MiB; Gemma 3 270M at 8,192: 514.5 MiB):

    all logits:     n_ubatch × (4 × (n_vocab + 2 × n_ff + n_embd) + 2 × cells), +2..3 %

It is an allowance: never below what was measured, and on a GPU backend the split differs.
"""

from __future__ import annotations

from engine.fit.facts import ModelFacts
from engine.fit.kv import DEFAULT_UBATCH, KvLayout

ACTIVATION_BYTES_PER_FF = 20  # per micro-batch token and feed-forward width


def compute_bytes(
    facts: ModelFacts, layout: KvLayout, *, flash_attn: bool = True, slots: int = 1,
    n_ubatch: int = DEFAULT_UBATCH, all_logits: bool = False,
) -> int:  # fmt: skip
    cells = max(layout.cells, layout.swa_cells)
    if all_logits:
        return n_ubatch * (4 * (facts.n_vocab + 2 * facts.n_ff + facts.n_embd) + 2 * cells)
    per_cell = 2 if flash_attn else 4 * max(facts.heads) + 4
    activations = n_ubatch * (ACTIVATION_BYTES_PER_FF * facts.n_ff + per_cell * cells)
    return activations + 4 * facts.n_vocab * max(slots, 1)
