"""The model's shape as llama.cpp reads it from the GGUF keys (`<arch>.block_count`, ...).

Which layers use a sliding window is not always in the file: llama.cpp's loader sets it per
architecture (`hparams.set_swa_pattern(n)`: layer `il` is windowed when `il % n < n - 1`,
so every n-th layer is dense). `<arch>.attention.sliding_window_pattern`, where a GGUF has
it, wins: a period, or one flag per layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gguf import LlamaFileType

from engine.fit.header import GgufHeader, LongArray

# llama.cpp's per-architecture period (src/llama-model.cpp, src/models/<arch>.cpp).
SWA_PERIOD = {"gemma2": 2, "gemma3": 6, "cohere2": 4, "gpt-oss": 2, "exaone4": 4, "llama4": 4}
# Windows set in code where the GGUF has none (llama4's chunked attention).
SWA_WINDOW = {"llama4": 8192}

_LAYER = re.compile(r"^blk\.(\d+)\.")


class NotAModel(Exception):
    """The GGUF is readable but says too little to estimate (an adapter, a projector)."""


@dataclass(frozen=True)
class ModelFacts:
    architecture: str
    name: str | None
    n_layer: int
    n_embd: int
    n_ff: int  # the widest feed-forward layer
    n_vocab: int
    heads: tuple[int, ...]  # query heads per layer
    kv_heads: tuple[int, ...]  # KV heads per layer (0: the layer keeps no KV)
    key_length: tuple[int, ...]  # per layer (windowed layers may differ)
    value_length: tuple[int, ...]
    swa_layers: tuple[bool, ...]
    sliding_window: int  # 0: none
    training_context: int | None
    parameters: int
    quantization: str | None
    size_label: str | None
    file_bytes: int
    chat_template: str | None
    layer_bytes: tuple[int, ...]  # weights of blk.N.*
    input_bytes: int  # the token embedding
    output_bytes: int  # output norm and head (and anything else outside the blocks)
    tied_output: bool  # no output.weight: llama.cpp reuses the embedding there

    @property
    def calls_tools(self) -> bool:
        """Whether the chat template renders tools at all (the test the embedded engine
        uses, engine/providers/chat_template.py)."""
        return self.chat_template is not None and "tools" in self.chat_template

    def public(self) -> dict[str, Any]:
        """What `brim fit --json` shows of the file."""
        return {
            "architecture": self.architecture,
            "name": self.name,
            "parameters": self.parameters,
            "size_label": self.size_label,
            "quantization": self.quantization,
            "file_bytes": self.file_bytes,
            "training_context": self.training_context,
            "block_count": self.n_layer,
            "head_count_kv": sorted(set(self.kv_heads)),
            "key_length": sorted(set(self.key_length)),
            "value_length": sorted(set(self.value_length)),
            "sliding_window": self.sliding_window or None,
            "sliding_window_layers": sum(self.swa_layers),
            "calls_tools": self.calls_tools,
        }


def _per_layer(value: Any, n_layer: int, default: int) -> tuple[int, ...]:
    if isinstance(value, list):
        out = [int(v) for v in value][:n_layer]
        return tuple(out + [out[-1] if out else default] * (n_layer - len(out)))
    return (int(value) if value is not None else default,) * n_layer


def _swa_layers(header: GgufHeader, arch: str, n_layer: int, window: int) -> tuple[bool, ...]:
    if window <= 0:
        return (False,) * n_layer
    pattern = header.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern, list) and pattern and isinstance(pattern[0], bool):
        return tuple(bool(p) for p in pattern[:n_layer]) + (False,) * (n_layer - len(pattern))
    period = int(pattern) if isinstance(pattern, int) else SWA_PERIOD.get(arch)
    if period is None:
        return (True,) * n_layer  # a window and no pattern: llama.cpp's default, all windowed
    return tuple(period == 0 or il % period < period - 1 for il in range(n_layer))


def _quantization(file_type: Any) -> str | None:
    try:
        return LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
    except (TypeError, ValueError):
        return None


def _vocab(header: GgufHeader, arch: str) -> int:
    tokens = header.get("tokenizer.ggml.tokens")
    if isinstance(tokens, LongArray):
        return tokens.count
    if isinstance(tokens, list):
        return len(tokens)
    return int(header.get(f"{arch}.vocab_size") or 0)


def model_facts(header: GgufHeader) -> ModelFacts:
    arch = header.get("general.architecture")
    if not isinstance(arch, str):
        raise NotAModel("names no architecture (general.architecture)")
    n_layer = header.get(f"{arch}.block_count")
    n_embd = header.get(f"{arch}.embedding_length")
    if not isinstance(n_layer, int) or not isinstance(n_embd, int) or n_layer <= 0:
        raise NotAModel(f"has no {arch}.block_count or {arch}.embedding_length: not a model")
    att = f"{arch}.attention"
    heads = _per_layer(header.get(f"{att}.head_count"), n_layer, 1)
    kv_heads = _per_layer(header.get(f"{att}.head_count_kv"), n_layer, heads[0])
    head_dim = n_embd // max(heads[0], 1)
    window = int(header.get(f"{att}.sliding_window") or SWA_WINDOW.get(arch, 0))
    swa = _swa_layers(header, arch, n_layer, window)
    k_len = int(header.get(f"{att}.key_length") or head_dim)
    v_len = int(header.get(f"{att}.value_length") or head_dim)
    k_swa = int(header.get(f"{att}.key_length_swa") or k_len)
    v_swa = int(header.get(f"{att}.value_length_swa") or v_len)
    layer_bytes = [0] * n_layer
    input_bytes = output_bytes = 0
    names = set()
    for t in header.tensors:
        names.add(t.name)
        match = _LAYER.match(t.name)
        if match and int(match[1]) < n_layer:
            layer_bytes[int(match[1])] += t.n_bytes
        elif t.name.startswith("token_embd"):
            input_bytes += t.n_bytes
        else:
            output_bytes += t.n_bytes
    ff = header.get(f"{arch}.feed_forward_length")
    context = header.get(f"{arch}.context_length")
    template = header.get("tokenizer.chat_template")
    return ModelFacts(
        architecture=arch,
        name=header.get("general.name") if isinstance(header.get("general.name"), str) else None,
        n_layer=n_layer,
        n_embd=n_embd,
        n_ff=max(_per_layer(ff, n_layer, 4 * n_embd)),
        n_vocab=_vocab(header, arch),
        heads=heads,
        kv_heads=kv_heads,
        key_length=tuple(k_swa if s else k_len for s in swa),
        value_length=tuple(v_swa if s else v_len for s in swa),
        swa_layers=swa,
        sliding_window=window if any(swa) else 0,
        training_context=int(context) if isinstance(context, int) else None,
        parameters=sum(t.n_elements for t in header.tensors),
        quantization=_quantization(header.get("general.file_type")),
        size_label=header.get("general.size_label")
        if isinstance(header.get("general.size_label"), str)
        else None,
        file_bytes=header.file_bytes,
        chat_template=template if isinstance(template, str) else None,
        layer_bytes=tuple(layer_bytes),
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        tied_output="output.weight" not in names,
    )
