"""What an engine's behaviour teaches about its window, after the start-up probe.

The probe (engine/window/resolution.py) says what the engine reports before any request.
Engines reveal more as they run: Ollama loads an unpinned model only on the first chat and
shows its window in /api/ps only then; llama-server names its per-slot `n_ctx` in an overflow
error, and may reject below what /props says when its slots share one KV pool; Ollama's
`prompt_eval_count` after a silent cut sits at the window it really served. Each of those is a
lesson, and the loop applies it at once: the thresholds, the tail and the header follow the
learned window.

The functions here are pure (a resolution and a piece of evidence in, a lesson or None out),
so every rule can be checked from a table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from engine.providers.errors import ContextOverflow
from engine.window.resolution import (
    MAX_SANE_WINDOW,
    MIN_SANE_WINDOW,
    WindowResolution,
    WindowSource,
)

LessonCause = Literal["loaded", "overflow", "rejected_below_report", "truncation", "reported"]

# Sources that are guesses: a confirmation by the engine is worth telling even when the
# number does not change ("Ollama loaded it with 4,096 tokens, as assumed").
GUESSED_SOURCES: frozenset[str] = frozenset({"assumed", "fallback", "model-max", "catalog"})

ENGINE_NAMES: dict[str, str] = {
    "ollama": "Ollama",
    "llamacpp": "llama-server",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "embedded": "The embedded engine",
}


@dataclass(frozen=True)
class WindowLesson:
    """A window the engine revealed, where it came from, and why Brim believes it."""

    window: int
    source: WindowSource
    cause: LessonCause
    reported: int | None = None  # what the engine said, where the ceiling lowered it


def sane(window: int | None) -> bool:
    """A window some real model could have (the same bounds the probe refuses outside)."""
    return window is not None and MIN_SANE_WINDOW <= window <= MAX_SANE_WINDOW


def from_loaded(current: WindowResolution, loaded: int | None) -> WindowLesson | None:
    """Ollama's /api/ps after an answer: the window the model was loaded with for this very
    request (the agent's num_ctx when pinned, else Ollama's own choice). It is the truth for
    an unpinned agent. A pinned one sends its pin: a larger figure means another client
    loaded it (the next request reloads it back), a smaller one that Ollama stepped the load
    down (it does after running out of memory), and then the smaller one is served."""
    if not sane(loaded):
        return None
    assert loaded is not None
    if current.pinned is not None and loaded >= current.window:
        return None
    if current.ceiling is not None and loaded > current.ceiling:
        # The user's max_context_tokens still caps what Brim accounts against.
        if current.window == current.ceiling and current.source == "ceiling":
            return None
        return WindowLesson(current.ceiling, "ceiling", "loaded", reported=loaded)
    if loaded == current.window and current.source not in GUESSED_SOURCES:
        return None
    return WindowLesson(loaded, "server", "loaded")


def from_overflow(
    current: WindowResolution, exc: ContextOverflow, *, sent: int, engine: str
) -> WindowLesson | None:
    """An engine rejected a request as too long. When the error names a window below the
    one Brim accounts against, that is the real one. When it names none, or one at least as
    large (llama-server whose slots share one KV pool reports the slot's n_ctx but runs out
    below it), the size it rejected is an upper bound: the window is below it. vLLM and
    SGLang fix their limit at start and also reject prompt + max_tokens, so only the number
    they name is learned from them."""
    window = current.window
    if sane(exc.window) and exc.window is not None and exc.window < window:
        return WindowLesson(exc.window, "server", "overflow")
    if engine in ("vllm", "sglang"):
        return None
    rejected = exc.prompt_tokens if exc.prompt_tokens and exc.prompt_tokens > 0 else sent
    if sane(rejected) and rejected < window:
        return WindowLesson(rejected, "observed", "rejected_below_report")
    return None


def from_truncation(current: WindowResolution, evaluated: int) -> WindowLesson | None:
    """Ollama cut a prompt and evaluated `evaluated` tokens: it keeps as much of the prompt
    as fits, so its window is at least that and usually barely more. Below the window Brim
    accounts against, it is the best figure there is until /api/ps says otherwise."""
    if not sane(evaluated) or evaluated >= current.window:
        return None
    if current.source in ("server", "pinned"):
        # A window the engine stated (or the num_ctx it was sent) stands: the cut only
        # dropped whole messages to fit it, and what was kept says less than the window.
        return None
    return WindowLesson(evaluated, "observed", "truncation")


def apply(current: WindowResolution, lesson: WindowLesson) -> WindowResolution:
    """The resolution with the lesson's window in force (its warnings are the probe's)."""
    served = lesson.window if lesson.source == "server" else current.served
    return replace(current, window=lesson.window, source=lesson.source, served=served)


def article(n: int) -> str:
    """'a 4,096-token window', 'an 8,192-token window', 'an 11,000-token window'."""
    lead = f"{n:,}".split(",")[0]
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"


def learned_text(
    current: WindowResolution, lesson: WindowLesson, *, compacts_at: int, sent: int = 0
) -> str:
    """The one line the transcript gets, e.g. "Ollama loaded qwen3:8b with a 4,096-token
    window; Brim now compacts at 3,276"."""
    engine = ENGINE_NAMES.get(current.provider, current.provider or "The engine")
    model = current.model or "its model"
    now = f"Brim now compacts at {compacts_at:,}"
    if lesson.cause == "loaded":
        loaded = lesson.reported or lesson.window
        size = f"{article(loaded)} {loaded:,}-token window"
        if lesson.source == "ceiling":
            return (
                f"{engine} loaded {model} with {size}; the agent's max_context_tokens keeps "
                f"Brim at {lesson.window:,}, and it compacts at {compacts_at:,}."
            )
        return f"{engine} loaded {model} with {size}; {now}."
    if lesson.cause == "overflow":
        return (
            f"{engine} serves {model} {article(lesson.window)} {lesson.window:,}-token window "
            f"(its overflow error says so), not {current.window:,}; {now}."
        )
    if lesson.cause == "reported":
        return (
            f"{engine} reports {article(lesson.window)} {lesson.window:,}-token window for "
            f"{model} when asked after its overflow error, not {current.window:,}; {now}."
        )
    if lesson.cause == "rejected_below_report":
        return (
            f"{engine} rejected a request of {lesson.window:,} tokens although it reports "
            f"{current.window:,} (slots sharing one KV pool can run out below it); Brim now "
            f"accounts against {lesson.window:,} and compacts at {compacts_at:,}."
        )
    return (
        f"{engine} cut the prompt to {lesson.window:,} tokens of the ~{sent:,} Brim sent, so "
        f"it serves {model} about {lesson.window:,} tokens, not {current.window:,}; {now}. "
        "Pin num_ctx in the agent to make it exact."
    )
