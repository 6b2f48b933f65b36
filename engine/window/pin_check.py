"""Whether the engine allocated the window Brim asked for, and if not, why.

After a load Brim compares its pin with what the engine holds: Ollama's `/api/ps`
`context_length` (the runner's num_ctx, per request), llama-server's per-slot `n_ctx`
(`/props` `default_generation_settings.n_ctx`, and each slot's in `/slots`). A difference is
told once, with the cause named only where the engine's answers tell it apart:

Ollama, which gets the pin as `options.num_ctx` on every request. The request's option
outranks the Modelfile, `OLLAMA_CONTEXT_LENGTH` and the VRAM-tier default (server/routes.go,
`modelOptions`; `usesAutomaticNumCtx` is false once the request names num_ctx), and only an
automatic window is stepped down after an out-of-memory load (server/sched.go,
`reduceAutoNumCtxForLoadOOM`). So for a pin neither the tier default nor the environment can
be the cause. What lowers it is the training length (sched.go `effectiveContext`,
llm/llama_server.go `NewLlamaServer`): seen when `/api/ps` shows exactly the training
length `/api/show` gives. Another client's load with its own num_ctx is a reload Brim's next
request undoes (engine/window/reloads.py), not a refusal. Anything else: "unknown".

llama-server, which Brim does not start: its `-c` is the whole KV cache, split evenly over
`-np` slots unless the pool is unified (then each slot may use all of it; the split shows as
`n_ctx / total_slots`, log line `n_ctx_slot = …, kv_unified = 'false'`). So a slot below the
pin whose slots together hold the pin is a `-np` split. A slot at the training length below
the pin is the training length. Otherwise it was started with a smaller `-c`, or its `--fit`
(on by default) lowered an unset `-c` to fit the device memory: `/props` and `/slots` carry
neither the command line nor the fit, so that cause is "unknown", and the text names both.

The functions are pure, so every rule is checked from a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

# Why the window allocated is smaller than the pin (a notice's `cause`).
PinCause = Literal["training_length", "parallel_split", "unknown"]

PIN_NOT_HONOURED: Final = "pin_not_honoured"


@dataclass(frozen=True)
class PinRefused:
    """The engine holds `allocated` tokens for a request where Brim asked for `asked`."""

    asked: int
    allocated: int
    cause: PinCause
    slots: int | None = None  # llama-server's total_slots
    model_max: int | None = None  # the training length, where the engine said it


def ollama_refusal(
    asked: int, allocated: int | None, *, model_max: int | None
) -> PinRefused | None:
    """Ollama loaded the model with `allocated` (`/api/ps`) for requests carrying `asked`."""
    if allocated is None or allocated <= 0 or allocated >= asked:
        return None
    if model_max is not None and allocated == model_max:
        return PinRefused(asked, allocated, "training_length", model_max=model_max)
    return PinRefused(asked, allocated, "unknown", model_max=model_max)


def llamacpp_refusal(
    asked: int,
    per_slot: int | None,
    *,
    slots: int | None,
    unified: bool,
    model_max: int | None,
) -> PinRefused | None:
    """llama-server's slots hold `per_slot` each (the smallest of them) where Brim pins `asked`."""
    if per_slot is None or per_slot <= 0 or per_slot >= asked:
        return None
    split = slots is not None and slots > 1 and not unified and per_slot * slots >= asked
    if split:
        return PinRefused(asked, per_slot, "parallel_split", slots=slots, model_max=model_max)
    if model_max is not None and per_slot == model_max:
        return PinRefused(asked, per_slot, "training_length", slots=slots, model_max=model_max)
    return PinRefused(asked, per_slot, "unknown", slots=slots, model_max=model_max)


def refusal_details(refused: PinRefused, *, engine: str, model: str) -> dict[str, int | str]:
    """The notice's figures: asked, allocated, cause (and slots, model_max where known)."""
    details: dict[str, int | str] = {
        "engine": engine,
        "model": model,
        "asked": refused.asked,
        "allocated": refused.allocated,
        "cause": refused.cause,
    }
    if refused.slots is not None:
        details["slots"] = refused.slots
    if refused.model_max is not None:
        details["model_max"] = refused.model_max
    return details


def refusal_text(
    refused: PinRefused, *, engine: str, model: str, compacts_at: int | None = None
) -> str:
    """One line for the conversation, e.g. "llama-server holds 2,048 tokens per slot for
    SmolLM2, not the 4,096 the agent pins: its -c 4,096 is split over 2 slots (-np 2); …"."""
    asked, got = f"{refused.asked:,}", f"{refused.allocated:,}"
    if engine == "llamacpp":
        head = f"llama-server holds {got} tokens per slot for {model}, not the {asked} pinned"
    else:
        head = f"Ollama loaded {model} with {got} tokens, not the {asked} pinned"
    if refused.cause == "parallel_split":
        slots = refused.slots or 0
        why = (
            f": its -c of {refused.allocated * slots:,} is split over {slots} slots (-np "
            f"{slots}); start it with -np 1, or -c {refused.asked * slots:,}"
        )
    elif refused.cause == "training_length":
        why = f": {model} was trained for {got} tokens, and the engine holds no more"
    elif engine == "llamacpp":
        why = (
            ": it was started with a smaller -c, or its --fit (on by default) lowered an "
            "unset -c to fit the device memory; its API does not say which"
        )
    else:
        why = ": Ollama does not say why"
    then = f" and compacts at {compacts_at:,}" if compacts_at else ""
    return f"{head}{why}. Brim accounts against {got}{then}."
