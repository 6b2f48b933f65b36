"""The pipe protocol between Brim and its embedded-engine child.

Every message is a small picklable dict. The parent sends `op` messages; the child answers
with `type` messages carrying the `id` of the request they belong to, so a late answer to a
cancelled request is recognised and dropped instead of leaking into the next one.

    parent → child                               child → parent
    {op: load, id, config: ChildConfig}          {type: progress, id, fraction}
                                                 {type: loaded, id, n_ctx, model_max,
                                                  has_template, supports_tools}
    {op: chat, id, messages, tools,              {type: delta, id, text}
     max_tokens, stop, sampling}                 {type: done, id, usage, finish_reason,
                                                  tool_calls}
    {op: tokenize, id, text, special}            {type: tokens, id, tokens}
    {op: cancel, id}                             (the chat with that id ends early)
    {op: stop}                                   (the child exits)
    any failure                                  {type: error, id, kind, message,
                                                  prompt_tokens?, window?}

`sampling` is a `Sampling` (engine/providers/sampling.py) as a dict: temperature, top_p,
top_k, min_p, repeat_penalty, seed (None: a fresh seed for this answer).

`kind` in an error is a `ProviderError.kind`. The parent itself synthesises one more
message, {type: crashed}, when the pipe closes without a goodbye.

Framing: a 4-byte big-endian length, then the pickled message. The channel is the child's
stdin and a private copy of its stdout (the child points fd 1 at stderr, so nothing that
native code prints can corrupt a frame). Both ends are Brim's own processes.
"""

from __future__ import annotations

import pickle
import re
import struct
from dataclasses import dataclass
from typing import IO, Any

LOAD_ID = "load"
_HEADER = struct.Struct(">I")

# llama-cpp-python's own wording, so an overflow raised inside the library reads the same.
OVERFLOW_PATTERN = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def overflow_message(prompt_tokens: int, window: int) -> str:
    return f"Requested tokens ({prompt_tokens}) exceed context window of {window}"


@dataclass(frozen=True)
class ChildConfig:
    """How the child loads its model. `n_ctx` 0 means the model's training length."""

    model_path: str
    n_ctx: int = 0
    n_threads: int = 2
    # llama.cpp's repacked CPU weight buffers crash `llama_decode` on some CPUs (AVX-512/AMX
    # machines among them); off unless asked for.
    extra_bufts: bool = False
    gpu_layers: int | None = None  # None: all when this llama.cpp can offload, else 0
    flash_attn: str = "auto"  # auto, on, off
    kv_cache_type: str = "f16"  # f16, q8_0, q4_0 (K and V alike)


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream: IO[bytes]) -> dict[str, Any]:
    """The next message; EOFError when the other side has gone."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the pipe closed")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the pipe closed mid-message")
    return pickle.loads(data)
