"""How the model picks its next token, and how each engine is told.

An engine left to its own sampling uses its own defaults, and they differ: vLLM and SGLang
sample at temperature 1.0 with no top-p, top-k or penalty when the model folder names
nothing (a small model then answers nonsense from the first turn); Ollama uses 0.8 / 40 /
0.9; llama-server 0.8 / 40 / 0.95 / min-p 0.05. So every request Brim sends carries every
setting below, the agent's or Brim's default, and no engine default ever applies. The seed
is the one exception: unset, each engine draws a fresh one per answer, which is what unset
means.

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
    """The sampler settings of one request, in Brim's names (engine-neutral)."""

    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K  # 0: no top-k cut
    min_p: float = DEFAULT_MIN_P  # 0: no min-p cut
    repeat_penalty: float = DEFAULT_REPEAT_PENALTY  # 1: no penalty
    seed: int | None = None  # None: a fresh seed for every answer

    def with_temperature(self, temperature: float | None) -> Sampling:
        """The same settings at another temperature (a side request's own); None: as is."""
        if temperature is None or temperature == self.temperature:
            return self
        return dataclasses.replace(self, temperature=temperature)

    def fields(self, dialect: Dialect) -> dict[str, Any]:
        """The request fields that carry these settings to an engine of `dialect`:
        "llamacpp" (llama-server's chat body), "openai" (vLLM's and SGLang's chat body),
        "ollama" (the `options` of Ollama's /api/chat)."""
        out: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "min_p": self.min_p,
        }
        if dialect == "openai":
            out["top_k"] = self.top_k if self.top_k > 0 else -1
            out["repetition_penalty"] = self.repeat_penalty
        else:
            out["top_k"] = self.top_k
            out["repeat_penalty"] = self.repeat_penalty
        if self.seed is not None:
            out["seed"] = self.seed
        return out

    def describe(self) -> str:
        """One line for `/context`: every setting sent with each answer."""
        seed = str(self.seed) if self.seed is not None else "new each answer"
        top_k = str(self.top_k) if self.top_k > 0 else "off"
        return (
            f"temperature {_num(self.temperature)} · top_p {_num(self.top_p)} · "
            f"top_k {top_k} · min_p {_num(self.min_p)} · "
            f"repeat_penalty {_num(self.repeat_penalty)} · seed {seed}"
        )


def _num(x: float) -> str:
    return f"{x:g}"
