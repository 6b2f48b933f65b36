"""What Brim does when the agent's pin pushed part of the model off the GPU (`on_spill`).

The spill itself is read from the engine (Ollama's `/api/ps` `size_vram < size`,
engine/providers/ollama_spill.py), with the largest window whose estimate stays on the GPU
(engine/fit, from the model's own GGUF) where that file can be read here. The policy:

- `warn` keeps the pin and says what spilled;
- `shrink` lowers the pin to that largest window and says so: the engine gets it from the
  next request on (Ollama reloads the model with it), and Brim accounts against it;
- `ask` offers both in the conversation (a `spill_choice` notice a window shows as a row
  with two buttons); headless, the notice is the event, and the pin is kept as with `warn`.

A spill at another window than the pin (another client's load) or with no pin, or with no
window known to fit, can only be told: every policy then warns.

The function is pure, so every rule is checked from a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SpillPolicy = Literal["warn", "shrink", "ask"]
SpillAction = Literal["warn", "shrink", "ask"]


@dataclass(frozen=True)
class SpillAct:
    """What the policy does with one spill: `asked` is the pin, `fits` the window that fits."""

    action: SpillAction
    asked: int | None
    fits: int | None
    cpu_percent: int


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def spill_act(policy: str, pin: int | None, details: dict[str, int | str]) -> SpillAct:
    """The act for a spill notice's `details` (cpu_percent, num_ctx, fits_num_ctx)."""
    at, fits = _int(details.get("num_ctx")), _int(details.get("fits_num_ctx"))
    cpu = _int(details.get("cpu_percent")) or 0
    can_lower = pin is not None and at == pin and fits is not None and 0 < fits < pin
    if can_lower and policy in ("shrink", "ask"):
        return SpillAct(policy, pin, fits, cpu)  # type: ignore[arg-type]
    return SpillAct("warn", pin, fits, cpu)


def lowered_text(model: str, act: SpillAct, *, compacts_at: int, chosen: bool = False) -> str:
    """shrink's line, e.g. "on_spill = shrink: num_ctx 40,960 left 23% of qwen3:8b on the
    CPU, so Brim lowers the pin to 32,768, the largest window that stays on the GPU; …"
    (`chosen`: the user picked it from an ask's choice)."""
    assert act.asked is not None and act.fits is not None
    why = "As chosen" if chosen else "on_spill = shrink"
    return (
        f"{why}: num_ctx {act.asked:,} left {act.cpu_percent}% of {model} on the CPU, so "
        f"Brim lowers the pin to {act.fits:,}, the largest window that stays on the GPU; the "
        f"next request reloads the model with it, and Brim now compacts at {compacts_at:,}."
    )


def choice_text(model: str, act: SpillAct) -> str:
    """ask's line: the two choices, with their figures."""
    assert act.asked is not None and act.fits is not None
    return (
        f"num_ctx {act.asked:,} leaves {act.cpu_percent}% of {model} on the CPU (slow answers); "
        f"{act.fits:,} stays on the GPU. Keep {act.asked:,}, or lower the pin to {act.fits:,}?"
    )
