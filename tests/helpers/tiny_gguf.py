"""Tiny GGUF files written with the official `gguf` writer: the keys an estimate reads and a
few small f32 tensors per layer, so tests can shape a model (per-layer KV heads, windows)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter


def write_tiny_gguf(
    path: Path,
    *,
    arch: str = "llama",
    n_layer: int = 4,
    n_embd: int = 64,
    n_head: int = 4,
    head_count_kv: int | list[int] = 2,
    context_length: int = 4096,
    sliding_window: int | None = None,
    key_length: int | None = None,
    chat_template: str | None = None,
    tie_output: bool = False,
    n_vocab: int = 32,
) -> Path:
    writer = GGUFWriter(str(path), arch)
    writer.add_name(f"tiny {arch}")
    writer.add_block_count(n_layer)
    writer.add_embedding_length(n_embd)
    writer.add_feed_forward_length(4 * n_embd)
    writer.add_head_count(n_head)
    if isinstance(head_count_kv, list):
        writer.add_array(f"{arch}.attention.head_count_kv", head_count_kv)
    else:
        writer.add_head_count_kv(head_count_kv)
    writer.add_context_length(context_length)
    if sliding_window is not None:
        writer.add_sliding_window(sliding_window)
    if key_length is not None:
        writer.add_key_length(key_length)
        writer.add_value_length(key_length)
    writer.add_file_type(0)
    writer.add_token_list([f"t{i}" for i in range(n_vocab)])
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    writer.add_tensor("token_embd.weight", np.zeros((n_vocab, n_embd), dtype=np.float32))
    for il in range(n_layer):
        writer.add_tensor(f"blk.{il}.attn_q.weight", np.zeros((n_embd, n_embd), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.zeros((n_embd,), dtype=np.float32))
    if not tie_output:
        writer.add_tensor("output.weight", np.zeros((n_vocab, n_embd), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
