"""Whose sampling a request carries: the agent's, the model's, the engine's, or Brim's.

One rule, given what the agent sets, what the model names for itself (None: not known), the
engine and whether the model is one Brim bundles:

    engine              model names some    model names nothing    not known     bundled
    embedded            model's, sent       Brim's, sent           Brim's, sent  Brim's, sent
    llamacpp            left to the server  left to the server     left          Brim's, sent
    ollama              left to the server  left to the server     left          Brim's, sent
    vllm / sglang       left to the server  Brim's, sent           left          Brim's, sent

(each row for the settings the agent leaves unset; what the agent sets is always sent.)

- The bundled models name nothing, and Brim's defaults were measured on them
  (engine/providers/sampling.py): they keep them on every engine.
- The embedded engine is Brim's own child: it applies nothing by itself, so the model's values
  (read from the GGUF's `general.sampling.*`) are sent, and Brim's fill the rest.
- llama-server applies a GGUF's `general.sampling.*` as its defaults, Ollama a Modelfile's
  PARAMETER lines; where the model names nothing they fall back on 0.8 / 40 / 0.95 (or 0.9),
  the defaults most models are published for. Left to them either way.
- vLLM (`--generation-config auto`, its default) and SGLang (`--sampling-defaults model`, its
  default) apply the model folder's `generation_config.json` (repetition_penalty, temperature,
  top_k, top_p, min_p) to every field a request leaves out; a folder without one samples at
  temperature 1.0 with no cut, which no model is published for: Brim's defaults then. A server
  started with `--generation-config vllm` or `--sampling-defaults openai` ignores the folder,
  which Brim cannot see from outside. Brim knows the folder only when the server's
  `/v1/models` root is a folder on this machine; otherwise it cannot tell whether the model
  names its own, and leaves the settings to the server, which may apply the model's.

The seed is never filled in: unset, every engine draws a fresh one per answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from engine.providers.sampling import BRIM_DEFAULTS, SETTINGS, Sampling, show_value

Source = Literal["agent", "model", "engine", "Brim"]

# Engines that sample an omitted field at temperature 1.0 with no cut when the model names
# nothing (vLLM's and SGLang's SamplingParams defaults).
BAD_FALLBACK = frozenset({"vllm", "sglang"})


@dataclass(frozen=True)
class ModelSampling:
    """What one model, as one engine serves it, says about its sampling.

    `named`: the settings the model's maker named, in Brim's names (a GGUF's
    `general.sampling.*`, a Modelfile's PARAMETER lines, a generation_config.json's fields).
    `engine`: what the engine applies to a field a request leaves out, where it says so
    (llama-server's `/props` `default_generation_settings.params`, which already holds the
    model's values; empty where the engine does not say). `thinks`: whether the model reasons
    before it answers (a `<think>` in its chat template, Ollama's `thinking` capability);
    None: not known."""

    named: Mapping[str, float] = field(default_factory=dict)
    engine: Mapping[str, float] = field(default_factory=dict)
    thinks: bool | None = None


@dataclass(frozen=True)
class Setting:
    value: float | None  # None: the engine's own, not known to Brim
    source: Source


@dataclass(frozen=True)
class SamplingPlan:
    """The settings one request sends (`send`) and where each of the six comes from."""

    send: Sampling
    settings: Mapping[str, Setting]
    thinks: bool | None = None

    def describe(self) -> str:
        """One line for `/context`: each setting, its value and its source."""
        parts = []
        for name in SETTINGS:
            setting = self.settings[name]
            if name == "seed" and setting.value is None:
                parts.append("seed new each answer")
                continue
            shown = show_value(name, setting.value) if setting.value is not None else "default"
            parts.append(f"{name} {shown} ({setting.source})")
        return " · ".join(parts)

    def blank_text(self, name: str) -> str:
        """What `name` left blank is, for the editor: "model's: 0.6", "engine default"."""
        setting = self.settings[name]
        if name == "seed" and setting.value is None:
            return "a new seed for every answer"
        if setting.value is None:
            return "engine default"
        owner = {"model": "model's", "engine": "engine's", "Brim": "Brim's", "agent": "agent's"}
        return f"{owner[setting.source]}: {show_value(name, setting.value)}"

    def warnings(self) -> list[str]:
        """What this sampling will cost: a thinking model decoding greedily."""
        setting = self.settings["temperature"]
        if not (self.thinks and setting.value is not None and setting.value == 0):
            return []
        # The remedy depends on who chose 0: the agent's own value can be unset; the model's
        # or Brim's (a bundled model's measured default) can only be overridden.
        remedy = {
            "agent": "unset the agent's temperature or raise it",
            "model": "the model's own settings say 0; set the agent's temperature to override it",
        }.get(setting.source, f"0 is {setting.source}'s default; set the agent's temperature")
        return [
            "this model thinks before it answers, and it is sampled at temperature 0 "
            f"({setting.source}): thinking models loop when they always take the likeliest "
            "token (Qwen's guidance is never to decode them greedily); "
            f"{remedy} (0.6 is what most of them are published with)"
        ]


def plan(
    agent: Sampling, model: ModelSampling | None, engine: str, *, bundled: bool
) -> SamplingPlan:
    """What a request sends for `agent`'s settings to `engine` serving a model that names
    `model` (None: not known), by the rule in this module's doc."""
    named = model.named if model is not None else {}
    if bundled:
        fill = BRIM_DEFAULTS
    elif engine == "embedded":
        fill = _as_sampling(named).filled(BRIM_DEFAULTS)
    elif engine in BAD_FALLBACK and model is not None and not named:
        fill = BRIM_DEFAULTS
    else:
        fill = Sampling()
    send = agent.filled(fill)
    settings: dict[str, Setting] = {}
    for name in SETTINGS:
        value = getattr(send, name)
        if getattr(agent, name) is not None:
            settings[name] = Setting(value, "agent")
        elif value is not None:
            from_model = not bundled and name in named and named[name] == value
            source: Source = "model" if from_model else "Brim"
            settings[name] = Setting(value, source)
        elif name in named:
            settings[name] = Setting(named[name], "model")
        else:
            engine_value = model.engine.get(name) if model is not None else None
            settings[name] = Setting(engine_value, "engine")
    return SamplingPlan(send, settings, model.thinks if model is not None else None)


def _as_sampling(named: Mapping[str, float]) -> Sampling:
    top_k, seed = named.get("top_k"), named.get("seed")
    return Sampling(
        temperature=named.get("temperature"),
        top_p=named.get("top_p"),
        top_k=int(top_k) if top_k is not None else None,
        min_p=named.get("min_p"),
        repeat_penalty=named.get("repeat_penalty"),
        seed=int(seed) if seed is not None else None,
    )
