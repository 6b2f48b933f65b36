"""Saying when a pin pushed an Ollama model off the GPU.

`/api/ps` lists each loaded model with `size` (the bytes it takes) and `size_vram` (those on
the GPU; api/types.go, ProcessModelResponse). When part of it is not on the GPU, answers
crawl: Brim says so once, with the share on the CPU, the window it was loaded at, and, when
the model's GGUF can be read here (the modelfile's FROM path, the file Brim already counts
with), the largest window whose estimate fits in the GPU memory this model can have: what
Ollama put on the GPU plus what NVML says is still free (engine/fit). The KV cache is taken
as f16 and one slot (Ollama's defaults; `OLLAMA_KV_CACHE_TYPE` and `OLLAMA_NUM_PARALLEL`
are the server's, which Brim cannot see).

A model entirely in RAM (`size_vram` 0) is only worth saying where a GPU is known to exist:
on a machine without one that is simply how Ollama runs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, Final

from engine.providers.base import EngineNotice
from engine.providers.classify import as_int

SPILL_KIND: Final = "model_spilled_to_cpu"
ESTIMATE_S = 10.0  # reading the GGUF's header; a slow disk must not hold up the start
_ROUND = 1024

log = logging.getLogger(__name__)


def spill_share(entry: dict[str, Any]) -> tuple[int, int] | None:
    """(size, size_vram) when part of the model is off the GPU, else None."""
    size, vram = as_int(entry.get("size")), as_int(entry.get("size_vram"))
    if size is None or vram is None or size <= 0 or not 0 <= vram < size:
        return None
    return size, vram


def _fits_num_ctx(blob: str, size_vram: int, gpu_free: int | None) -> int | None:
    from engine.fit.estimate import FitRequest, max_num_ctx_on_gpu
    from engine.fit.report import FitUnavailable, read_facts

    try:
        facts = read_facts(blob)
    except FitUnavailable as exc:
        log.info("no window estimate for the spill notice: %s", exc)
        return None
    budget = size_vram + (gpu_free or 0)
    largest = max_num_ctx_on_gpu(facts, replace(FitRequest(4096), gpu_layers=-1), budget)
    return largest // _ROUND * _ROUND if largest >= _ROUND else largest or None


def spill_text(model: str, cpu_percent: int, num_ctx: int | None, fits: int | None) -> str:
    at = f" at num_ctx {num_ctx:,}" if num_ctx else ""
    tail = f"; {fits:,} fits" if fits and (num_ctx is None or fits < num_ctx) else ""
    return f"{cpu_percent}% of {model} is on the CPU{at}: expect slow answers{tail}"


async def spill_notice(model: str, entry: dict[str, Any], blob: str | None) -> EngineNotice | None:
    """The notice for `model`'s `/api/ps` entry, or None when it is all on the GPU."""
    share = spill_share(entry)
    if share is None:
        return None
    size, vram = share
    from engine.fit.gpu import gpu_free_bytes

    gpu_free = await asyncio.to_thread(gpu_free_bytes)
    if vram == 0 and gpu_free is None:
        return None  # no GPU known: running in RAM is not a spill
    fits: int | None = None
    if blob is not None:
        try:
            fits = await asyncio.wait_for(
                asyncio.to_thread(_fits_num_ctx, blob, vram, gpu_free), ESTIMATE_S
            )
        except TimeoutError:
            fits = None
    num_ctx = as_int(entry.get("context_length"))
    percent = max(1, round(100 * (size - vram) / size))
    details: dict[str, int | str] = {
        "model": model,
        "size_bytes": size,
        "size_vram_bytes": vram,
        "cpu_percent": percent,
    }
    if num_ctx:
        details["num_ctx"] = num_ctx
    if fits:
        details["fits_num_ctx"] = fits
    return EngineNotice(SPILL_KIND, spill_text(model, percent, num_ctx, fits), details)
