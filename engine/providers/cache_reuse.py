"""Whether an engine reuses a kept run of its cache at a new position, as found by asking it.

llama-server can move a chunk of what a slot holds to a new place in the prompt
(`n_cache_reuse`), but only where the model's memory can shift: it turns the feature off for
sliding-window, hybrid and recurrent models (and multimodal prompts), whatever the flag says.
No field of `/props` tells which, and a model's name proves nothing, so Brim asks with a
probe request and reads the server's own `timings.cache_n` (`llamacpp_reuse_probe.py`).

A compaction lays its checkpoint after the kept messages only where this says yes; elsewhere
the checkpoint goes first, since moving it buys nothing when nothing is moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LINE_LABEL = "Cache reuse at new positions"


def reuse_line(reuses: bool | None) -> str:
    """The line `brim probe` and `/context` show: yes or no (probed), or not probed."""
    answer = "not probed" if reuses is None else "yes (probed)" if reuses else "no (probed)"
    return f"{LINE_LABEL}: {answer}"


@dataclass(frozen=True)
class CacheReuse:
    """What a probe found. `reuses` None: not probed (an engine with no such feature, or a
    probe that could not tell, `reason` says why). The figures are the probe's second
    request: what the server served from its cache, the common prefix of the two prompts,
    and the tokens reused beyond it (what was moved)."""

    reuses: bool | None
    cached: int | None = None
    common_prefix: int | None = None
    prompt: int | None = None
    reason: str = ""

    @property
    def probed(self) -> bool:
        return self.reuses is not None

    @property
    def moved(self) -> int | None:
        if self.cached is None or self.common_prefix is None:
            return None
        return max(0, self.cached - self.common_prefix)

    def line(self) -> str:
        return reuse_line(self.reuses)

    def to_json(self) -> dict[str, Any]:
        return {
            "reuses": self.reuses,
            "cached": self.cached,
            "common_prefix": self.common_prefix,
            "moved": self.moved,
            "prompt": self.prompt,
            "reason": self.reason,
        }


NOT_PROBED = CacheReuse(None, reason="this engine has no probe for it")
NOT_YET_PROBED = CacheReuse(None, reason="the probe has not run")
