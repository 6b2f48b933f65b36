"""How the model picks its next token, and how each engine is told.

A setting the agent leaves unset (None) is not sent: the engine then applies what the model's
maker named (a GGUF's `general.sampling.*`, an Ollama Modelfile's PARAMETER lines, a vLLM or
SGLang model folder's `generation_config.json`) or its own default. Which unset settings Brim
fills in with its own measured defaults (the bundled model; a model that names nothing on an
engine whose own fallback is bad) is decided in one place: engine/providers/sampling_source.py.
The engines' own defaults differ: vLLM and SGLang sample at temperature 1.0 with no top-p,
top-k or penalty when the model folder names nothing (a small model then answers nonsense from
the first turn); Ollama uses 0.8 / 40 / 0.9; llama-server 0.8 / 40 / 0.95 / min-p 0.05. The
seed unset means a fresh one per answer on every engine.

Each engine has its own names for them (read in the engines' sources):

    Brim            llama-server    Ollama options    vLLM / SGLang         embedded
    temperature     temperature     temperature       temperature           temp
    top_p           top_p           top_p             top_p                 top_p
    top_k (0: off)  top_k (0: off)  top_k (0: off)    top_k (-1: off)       top_k (0: off)
    min_p           min_p           min_p             min_p                 min_p
    repeat_penalty  repeat_penalty  repeat_penalty    repetition_penalty    repeat_penalty
    seed            seed            seed              seed                  Llama.set_seed

vLLM and SGLang ignore a field they do not know (`repeat_penalty` would be dropped without a
word), and SGLang refuses top_k 0; llama.cpp's penalty looks back 64 tokens, vLLM's and
SGLang's `repetition_penalty` covers the whole prompt too. SGLang applies the seed only on a
server started with `--enable-deterministic-inference`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

# Measured on the bundled SmolLM2-135M-Instruct through the embedded engine, the default
# agent's own request (system prompt and tools) included: bench/sampling.py, whose doc has the
# figures. The likeliest token every time (temperature 0) answered best; a repeat penalty
# of 1.1 made it answer "2 + 0 = 2" (it penalises the question's own tokens), 1.05 did not. At
# temperature 0 the cuts change nothing; they are the ones that kept 0.2 answering well, for
# an agent that raises the temperature (0.7 with them already lost half the answers).
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TOP_P = 0.9
DEFAULT_TOP_K = 40
DEFAULT_MIN_P = 0.05
# A light penalty: at 1.0 the greedy bundled model looped on its very first answer ("Say
# hello." repeated one passage 16 times) and 2 of 4 plain prompts; at 1.05 none looped.
DEFAULT_REPEAT_PENALTY = 1.05

SEED_MAX = 2_147_483_647  # a signed 32-bit integer: every engine takes it as it is

Dialect = Literal["llamacpp", "openai", "ollama"]


@dataclass(frozen=True)
class Sampling:
    """The sampler settings of one request, in Brim's names (engine-neutral). None: not set,
    so not sent (the model's or the engine's own value applies)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None  # 0: no top-k cut
    min_p: float | None = None  # 0: no min-p cut
    repeat_penalty: float | None = None  # 1: no penalty
    seed: int | None = None  # None: a fresh seed for every answer

    def unset(self) -> tuple[str, ...]:
        """The settings left to the model or the engine, in SETTINGS' order."""
        return tuple(name for name in SETTINGS if getattr(self, name) is None)

    def filled(self, values: Sampling) -> Sampling:
        """These settings, each unset one taken from `values`."""
        taken = {n: getattr(values, n) for n in self.unset() if getattr(values, n) is not None}
        return dataclasses.replace(self, **taken) if taken else self

    def with_temperature(self, temperature: float | None) -> Sampling:
        """The same settings at another temperature (a side request's own); None: as is."""
        if temperature is None or temperature == self.temperature:
            return self
        return dataclasses.replace(self, temperature=temperature)

    def fields(self, dialect: Dialect) -> dict[str, Any]:
        """The request fields that carry these settings to an engine of `dialect`:
        "llamacpp" (llama-server's chat body), "openai" (vLLM's and SGLang's chat body),
        "ollama" (the `options` of Ollama's /api/chat). Unset settings are left out."""
        out: dict[str, Any] = {}
        for name in ("temperature", "top_p", "min_p"):
            if (value := getattr(self, name)) is not None:
                out[name] = value
        if self.top_k is not None:
            out["top_k"] = self.top_k if self.top_k > 0 or dialect != "openai" else -1
        if self.repeat_penalty is not None:
            penalty = "repetition_penalty" if dialect == "openai" else "repeat_penalty"
            out[penalty] = self.repeat_penalty
        if self.seed is not None:
            out["seed"] = self.seed
        return out


SETTINGS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")

# Brim's measured defaults (above), as one value: what the bundled model is sampled with.
BRIM_DEFAULTS = Sampling(
    temperature=DEFAULT_TEMPERATURE,
    top_p=DEFAULT_TOP_P,
    top_k=DEFAULT_TOP_K,
    min_p=DEFAULT_MIN_P,
    repeat_penalty=DEFAULT_REPEAT_PENALTY,
)


def show_value(name: str, value: float | None) -> str:
    """One setting's value as `/context` and the editor write it."""
    if value is None:
        return "new each answer" if name == "seed" else "?"
    if name == "top_k" and value <= 0:
        return "off"
    return f"{value:g}"
