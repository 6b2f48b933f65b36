"""What a model names for its own sampling, read where each engine keeps it.

- A GGUF's `general.sampling.*` (the `gguf` package's `Keys.General.SAMPLING_*`): llama-server
  reads temp, top_k, top_p, min_p, penalty_repeat (and penalty_last_n, mirostat*, xtc_*,
  sequence, which Brim does not set) into its defaults unless its command line set them
  (common/common.cpp), and `/props` `default_generation_settings.params` shows the result,
  the server's own defaults merged in. Brim reads the file's header itself where the file is
  on this machine (the embedded engine's model; llama-server's `model_path` on a loopback
  server), so it can tell the model's values from the server's.
- A model folder's `generation_config.json`, which vLLM (`--generation-config auto`, its
  default) and SGLang apply to what a request leaves out: repetition_penalty, temperature,
  top_k, top_p, min_p. Brim reads it only where the server's `/v1/models` root is a folder on
  this machine; a Hub id or a remote server's path cannot be read, and is not guessed at.
- An Ollama Modelfile's PARAMETER lines: engine/providers/ollama_answers.py.

Every reader gives the values in Brim's names, and nothing for what it cannot read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gguf import Keys

from engine.fit.header import read_header
from engine.providers.bundled_models import named
from engine.providers.sampling import Sampling
from engine.providers.sampling_source import ModelSampling, SamplingPlan, plan

_GGUF_KEYS = {
    Keys.General.SAMPLING_TEMP: "temperature",
    Keys.General.SAMPLING_TOP_P: "top_p",
    Keys.General.SAMPLING_TOP_K: "top_k",
    Keys.General.SAMPLING_MIN_P: "min_p",
    Keys.General.SAMPLING_PENALTY_REPEAT: "repeat_penalty",
}
# llama-server's /props params and Brim share these names.
_SERVER_PARAMS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty")
_GENERATION_CONFIG = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "repetition_penalty": "repeat_penalty",
}
_INTS = frozenset({"top_k", "seed"})
_TEMPLATE_KEY = "tokenizer.chat_template"
THINK_TAG = "<think>"


def _number(name: str, value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if name in _INTS else round(float(value), 6)  # GGUF keeps f32


def _pick(source: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, name in names.items():
        value = _number(name, source.get(key))
        if value is not None:
            out[name] = value
    return out


def gguf_sampling(metadata: Mapping[str, Any]) -> dict[str, float]:
    """The settings a GGUF's metadata names (`general.sampling.*`)."""
    return _pick(metadata, _GGUF_KEYS)


def template_thinks(template: Any) -> bool | None:
    """Whether a chat template opens a `<think>` block (a reasoning model's); None: no
    template to read."""
    return THINK_TAG in template if isinstance(template, str) and template else None


def read_gguf(path: str | Path) -> tuple[dict[str, float], bool | None] | None:
    """A GGUF file's named settings and whether its template thinks; None when the file
    cannot be read here."""
    try:
        header = read_header(str(path))
    except Exception:  # a missing, remote or damaged file: not known, never a failed start
        return None
    return gguf_sampling(header.metadata), template_thinks(header.get(_TEMPLATE_KEY))


def file_sampling(path: str | Path) -> ModelSampling:
    """What a GGUF on this machine names (nothing where it cannot be read)."""
    read = read_gguf(path)
    return ModelSampling(named=read[0], thinks=read[1]) if read else ModelSampling()


def file_plan(
    learned: dict[str, ModelSampling], path: str, sampling: Sampling, engine: str
) -> SamplingPlan:
    """The plan for a GGUF on this machine (the embedded engine's): what it names, read once
    into `learned`; Brim's measured defaults where it is a bundled model's file."""
    if (found := learned.get(path)) is None:
        found = learned[path] = file_sampling(path)
    return plan(sampling, found, engine, bundled=named(Path(path).name) is not None)


def server_params(params: Any) -> dict[str, float]:
    """llama-server's `/props` `default_generation_settings.params`: what it samples a
    request with that leaves a setting out (the GGUF's values over its own defaults)."""
    return _pick(params, {n: n for n in _SERVER_PARAMS}) if isinstance(params, dict) else {}


def generation_config(folder: str | Path) -> dict[str, float] | None:
    """The settings a model folder's `generation_config.json` names ({} for a folder
    without one); None when `folder` is not a folder on this machine."""
    path = Path(folder)
    try:
        if not path.is_dir():
            return None
        config_file = path / "generation_config.json"
        if not config_file.is_file():
            return {}
        config = json.loads(config_file.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return _pick(config, _GENERATION_CONFIG) if isinstance(config, dict) else {}
