"""One model file, one request: the estimate `brim fit`, the probe and the editor show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.fit.estimate import Estimate, FitRequest, estimate
from engine.fit.facts import ModelFacts, NotAModel, model_facts
from engine.fit.gpu import gpu_free_bytes, ram_available_bytes
from engine.fit.header import GgufUnreadable, read_header


class FitUnavailable(Exception):
    """No estimate for this file; the message names the file and why."""


@dataclass(frozen=True)
class FitReport:
    path: str
    facts: ModelFacts
    estimate: Estimate

    def public(self) -> dict[str, Any]:
        return {"model_path": self.path, **self.estimate.public(), "model": self.facts.public()}


def read_facts(path: str) -> ModelFacts:
    """The model's facts from its GGUF; FitUnavailable (one line) when it is not readable."""
    try:
        return model_facts(read_header(path))
    except (GgufUnreadable, NotAModel) as exc:
        raise FitUnavailable(f"{path} {exc}") from None


def fit_report(
    path: str,
    request: FitRequest,
    *,
    gpu_free: int | bool | None = True,
    ram: int | bool | None = True,
) -> FitReport:
    """`gpu_free`/`ram` True: ask the machine now (NVML, /proc/meminfo); else the given
    figure (None: unknown)."""
    facts = read_facts(path)
    free = gpu_free_bytes() if gpu_free is True else gpu_free
    avail = ram_available_bytes() if ram is True else ram
    est = estimate(
        facts,
        request,
        gpu_free=free if not isinstance(free, bool) else None,
        ram=avail if not isinstance(avail, bool) else None,
    )
    return FitReport(path, facts, est)
