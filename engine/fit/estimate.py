"""The memory a model costs at a window, per device, and whether it fits.

Verdicts (data, for any reader to word):
    fits_on_gpu    everything the GPU is asked to hold fits in its free memory, nothing spills
    spills_to_cpu  part runs on the CPU: chosen (`gpu_layers` below all), or forced because
                   the GPU is too small while GPU and RAM together hold it
    does_not_fit   not even GPU and RAM together hold it
    unknown        the GPU's free memory is not known (no NVIDIA driver): no guess is made
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.fit.compute import compute_bytes
from engine.fit.facts import ModelFacts
from engine.fit.kv import CELL_PAD, KV_TYPES, kv_layer_bytes, kv_layout
from engine.fit.weights import all_layers, placement, weight_bytes

FITS, SPILLS, NO_FIT, UNKNOWN = "fits_on_gpu", "spills_to_cpu", "does_not_fit", "unknown"


@dataclass(frozen=True)
class FitRequest:
    num_ctx: int
    kv_cache_type: str = "f16"
    slots: int = 1
    gpu_layers: int | None = None  # None or negative: all
    flash_attn: bool = True  # llama.cpp's "auto" turns it on wherever the backend has it
    unified: bool = False  # one KV pool shared by the slots (llama-server without -np)
    # llama-cpp-python (the embedded engine) as it builds its context: a full-size cache for
    # sliding-window layers (llama.cpp's own default) and logits for every batch position.
    swa_full: bool = False
    all_logits: bool = False

    def at(self, num_ctx: int, kv_cache_type: str | None = None) -> FitRequest:
        """The same request at another window (and KV type)."""
        return replace(self, num_ctx=num_ctx, kv_cache_type=kv_cache_type or self.kv_cache_type)


@dataclass(frozen=True)
class Estimate:
    request: FitRequest
    weights_gpu_bytes: int
    weights_cpu_bytes: int
    kv_gpu_bytes: int
    kv_cpu_bytes: int
    compute_bytes: int
    compute_on_gpu: bool
    cells: int
    gpu_free_bytes: int | None
    ram_available_bytes: int | None
    verdict: str
    max_num_ctx_on_gpu: dict[str, int | None] = field(default_factory=dict)

    @property
    def weights_bytes(self) -> int:
        return self.weights_gpu_bytes + self.weights_cpu_bytes

    @property
    def kv_bytes(self) -> int:
        return self.kv_gpu_bytes + self.kv_cpu_bytes

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.compute_bytes

    @property
    def gpu_bytes(self) -> int:
        return (
            self.weights_gpu_bytes
            + self.kv_gpu_bytes
            + (self.compute_bytes if self.compute_on_gpu else 0)
        )

    def public(self) -> dict[str, Any]:
        r = self.request
        return {
            "num_ctx": r.num_ctx,
            "kv_cache_type": r.kv_cache_type,
            "slots": r.slots,
            "gpu_layers": r.gpu_layers,
            "flash_attn": r.flash_attn,
            "kv_cells": self.cells,
            "weights_bytes": self.weights_bytes,
            "weights_gpu_bytes": self.weights_gpu_bytes,
            "kv_bytes": self.kv_bytes,
            "kv_gpu_bytes": self.kv_gpu_bytes,
            "compute_bytes": self.compute_bytes,
            "total_bytes": self.total_bytes,
            "gpu_bytes": self.gpu_bytes,
            "gpu_free_bytes": self.gpu_free_bytes,
            "ram_available_bytes": self.ram_available_bytes,
            "verdict": self.verdict,
            "max_num_ctx_on_gpu": self.max_num_ctx_on_gpu,
        }


def _parts(facts: ModelFacts, r: FitRequest) -> tuple[int, int, int, int, int, bool, int]:
    where = placement(facts, r.gpu_layers)
    w_gpu, w_cpu = weight_bytes(facts, where)
    layout = kv_layout(facts, r.num_ctx, r.slots, unified=r.unified, swa_full=r.swa_full)
    per_layer = kv_layer_bytes(facts, layout, r.kv_cache_type)
    kv_gpu = sum(b for il, b in enumerate(per_layer) if where.on_gpu(facts, il))
    kv_cpu = sum(per_layer) - kv_gpu
    compute = compute_bytes(
        facts, layout, flash_attn=r.flash_attn, slots=r.slots, all_logits=r.all_logits
    )
    on_gpu = where.gpu_layers > 0
    return w_gpu, w_cpu, kv_gpu, kv_cpu, compute, on_gpu, layout.cells * layout.streams


def _gpu_need(facts: ModelFacts, r: FitRequest) -> int:
    w_gpu, _, kv_gpu, _, compute, on_gpu, _ = _parts(facts, r)
    return w_gpu + kv_gpu + (compute if on_gpu else 0)


def max_num_ctx_on_gpu(facts: ModelFacts, r: FitRequest, gpu_free: int) -> int:
    """The largest window (a multiple of 256, at most the training length) at which the whole
    model stays on the GPU with `r`'s KV type and slots; 0 when not even 256 cells do."""
    full = replace(r, gpu_layers=-1)
    top = (facts.training_context or 1 << 20) // CELL_PAD
    lo, hi = 0, top  # in units of 256 cells: lo fits (0 trivially), hi + 1 does not
    if _gpu_need(facts, full.at(top * CELL_PAD)) <= gpu_free:
        return top * CELL_PAD
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _gpu_need(facts, full.at(mid * CELL_PAD)) <= gpu_free:
            lo = mid
        else:
            hi = mid - 1
    return lo * CELL_PAD


def _verdict(facts: ModelFacts, r: FitRequest, need: int, total: int,
             gpu_free: int | None, ram: int | None) -> str:  # fmt: skip
    if gpu_free is None:
        return UNKNOWN
    everything = placement(facts, r.gpu_layers).output_on_gpu
    if need <= gpu_free:
        return FITS if everything else SPILLS
    if ram is not None and total <= gpu_free + ram:
        return SPILLS
    return NO_FIT if ram is not None else UNKNOWN


def estimate(
    facts: ModelFacts, r: FitRequest, *, gpu_free: int | None, ram: int | None
) -> Estimate:
    w_gpu, w_cpu, kv_gpu, kv_cpu, compute, on_gpu, cells = _parts(facts, r)
    need = w_gpu + kv_gpu + (compute if on_gpu else 0)
    total = w_gpu + w_cpu + kv_gpu + kv_cpu + compute
    largest: dict[str, int | None] = {
        t: (
            max_num_ctx_on_gpu(facts, r.at(r.num_ctx, t), gpu_free)
            if gpu_free is not None
            else None
        )
        for t in KV_TYPES
    }
    return Estimate(
        request=r,
        weights_gpu_bytes=w_gpu,
        weights_cpu_bytes=w_cpu,
        kv_gpu_bytes=kv_gpu,
        kv_cpu_bytes=kv_cpu,
        compute_bytes=compute,
        compute_on_gpu=on_gpu,
        cells=cells,
        gpu_free_bytes=gpu_free,
        ram_available_bytes=ram,
        verdict=_verdict(facts, r, need, total, gpu_free, ram),
        max_num_ctx_on_gpu=largest,
    )


def default_gpu_layers(facts: ModelFacts) -> int:
    return all_layers(facts)
