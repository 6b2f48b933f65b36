"""What each engine samples with for one request body, by the engine's own rules.

Written from the engines' sources, not from Brim: each reads only the field names it knows
(an unknown one is dropped without a word, as vLLM, SGLang and Ollama drop them), fills in its
own defaults, and refuses what its validator refuses. The fakes record the result on the
request (`RecordedRequest.sampling`), in the engine's names.

- llama-server: tools/server/server-task.cpp `params_from_json_cmpl` (`top_k`, `top_p`,
  `min_p`, `temperature`, `repeat_penalty`, `seed`), defaults from common/common.h
  (0.8, 40, 0.95, 0.05, 1.0, LLAMA_DEFAULT_SEED = random).
- vLLM: ChatCompletionRequest (`top_k`, `min_p`, `repetition_penalty`, `seed`) and
  SamplingParams._verify_args; with no generation_config in the model folder: temperature
  1.0, top_p 1.0, top_k 0 (all), min_p 0.0, repetition_penalty 1.0.
- SGLang: ChatCompletionRequest → SamplingParams (`seed` becomes `sampling_seed`),
  `verify()`: top_k -1 or at least 1, top_p in (0, 1], repetition_penalty in (0, 2].
- Ollama: api/types.go DefaultOptions (0.8, 40, 0.9, min_p 0, repeat_penalty 1.0, seed -1),
  `options` over them.
"""

from __future__ import annotations

from typing import Any

Applied = dict[str, Any]


def _number(body: dict[str, Any], key: str, default: Any) -> Any:
    value = body.get(key)
    return default if value is None else value


def llama_server(body: dict[str, Any]) -> Applied:
    return {
        "temperature": _number(body, "temperature", 0.8),
        "top_k": _number(body, "top_k", 40),
        "top_p": _number(body, "top_p", 0.95),
        "min_p": _number(body, "min_p", 0.05),
        "repeat_penalty": _number(body, "repeat_penalty", 1.0),
        "seed": _number(body, "seed", 0xFFFFFFFF),
    }


def vllm(body: dict[str, Any]) -> Applied | str:
    """The settings, or the 400's message when vLLM refuses them."""
    applied = {
        "temperature": _number(body, "temperature", 1.0),
        "top_p": _number(body, "top_p", 1.0),
        "top_k": _number(body, "top_k", 0),
        "min_p": _number(body, "min_p", 0.0),
        "repetition_penalty": _number(body, "repetition_penalty", 1.0),
        "seed": body.get("seed"),
    }
    if applied["temperature"] < 0.0:
        return f"temperature must be non-negative, got {applied['temperature']}."
    if not 0.0 < applied["top_p"] <= 1.0:
        return f"top_p must be in (0, 1], got {applied['top_p']}."
    if applied["top_k"] < -1:
        return f"top_k must be 0 (disable), or at least 1, got {applied['top_k']}."
    if not 0.0 <= applied["min_p"] <= 1.0:
        return f"min_p must be in [0, 1], got {applied['min_p']}."
    if applied["repetition_penalty"] <= 0.0:
        return f"repetition_penalty must be greater than zero, got {applied['repetition_penalty']}."
    return applied


SGLANG_TOP_K_ALL = 1 << 30


def sglang(body: dict[str, Any]) -> Applied | str:
    """The settings, or the 400's message when SGLang refuses them."""
    applied = {
        "temperature": _number(body, "temperature", 1.0),
        "top_p": _number(body, "top_p", 1.0),
        "top_k": _number(body, "top_k", -1),
        "min_p": _number(body, "min_p", 0.0),
        "repetition_penalty": _number(body, "repetition_penalty", 1.0),
        "sampling_seed": body.get("seed"),
    }
    if 0 <= applied["temperature"] < 1e-6:  # greedy: top_k 1
        applied["temperature"], applied["top_k"] = 1.0, 1
    if applied["top_k"] == -1:
        applied["top_k"] = SGLANG_TOP_K_ALL
    if not 0.0 < applied["top_p"] <= 1.0:
        return f"top_p must be in (0, 1], got {applied['top_p']}."
    if not 0.0 <= applied["min_p"] <= 1.0:
        return f"min_p must be in [0, 1], got {applied['min_p']}."
    if applied["top_k"] < 1:
        return f"top_k must be -1 (disable) or at least 1, got {applied['top_k']}."
    if not 0.0 < applied["repetition_penalty"] <= 2.0:
        return (
            "repetition_penalty must be in (0, 2] (1.0 = no penalty), "
            f"got {applied['repetition_penalty']}."
        )
    return applied


def ollama(options: dict[str, Any]) -> Applied:
    return {
        "temperature": _number(options, "temperature", 0.8),
        "top_k": _number(options, "top_k", 40),
        "top_p": _number(options, "top_p", 0.9),
        "min_p": _number(options, "min_p", 0.0),
        "repeat_penalty": _number(options, "repeat_penalty", 1.0),
        "seed": _number(options, "seed", -1),
    }
