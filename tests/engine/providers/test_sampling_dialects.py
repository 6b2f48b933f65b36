"""Every engine samples with the agent's settings, told in its own names; none falls back on
its own defaults (vLLM's temperature 1.0) because Brim left a setting out.

The doubles read the request as each engine does (tests/helpers/engine_sampling.py): a field
under another engine's name is dropped there, and what an engine refuses is a 400."""

from __future__ import annotations

import pytest

from engine.config import AgentConfig
from engine.providers.base import ChatOptions
from engine.providers.sampling import Sampling
from engine.session import provider_for
from tests.engine.providers.conftest import FAKES, MODELS, chat
from tests.helpers.engine_sampling import SGLANG_TOP_K_ALL

pytestmark = pytest.mark.anyio

# An agent's own settings, each unlike every engine's default.
OWN = {"temperature": 0.3, "top_p": 0.8, "top_k": 20, "min_p": 0.1, "repeat_penalty": 1.05}


async def applied(kind: str, agent_values: dict[str, object], temperature: float | None = None):
    """What the engine (its double) sampled with for one request of an agent so set."""
    with FAKES[kind]() as fake:
        agent = AgentConfig(name="a", provider=kind, base_url=fake.url, **agent_values)
        provider = provider_for(agent)
        try:
            options = ChatOptions(max_tokens=8, sampling=agent.sampling, temperature=temperature)
            await chat(provider, MODELS[kind], options=options)
        finally:
            await provider.aclose()
        (request,) = fake.chat_requests
        return request.sampling


async def test_llama_server_samples_with_the_agents_settings_and_seed(anyio_backend):
    got = await applied("llamacpp", {**OWN, "seed": 7})
    assert got == {
        "temperature": 0.3,
        "top_k": 20,
        "top_p": 0.8,
        "min_p": 0.1,
        "repeat_penalty": 1.05,
        "seed": 7,
    }


async def test_ollama_samples_with_the_agents_settings_and_seed(anyio_backend):
    got = await applied("ollama", {**OWN, "seed": 7})
    assert got == {
        "temperature": 0.3,
        "top_k": 20,
        "top_p": 0.8,
        "min_p": 0.1,
        "repeat_penalty": 1.05,
        "seed": 7,
    }


async def test_vllm_gets_the_repeat_penalty_as_its_repetition_penalty(anyio_backend):
    got = await applied("vllm", {**OWN, "seed": 7})
    assert got == {
        "temperature": 0.3,
        "top_p": 0.8,
        "top_k": 20,
        "min_p": 0.1,
        "repetition_penalty": 1.05,
        "seed": 7,
    }


async def test_sglang_gets_the_repeat_penalty_and_the_seed_in_its_own_names(anyio_backend):
    got = await applied("sglang", {**OWN, "seed": 7})
    assert got == {
        "temperature": 0.3,
        "top_p": 0.8,
        "top_k": 20,
        "min_p": 0.1,
        "repetition_penalty": 1.05,
        "sampling_seed": 7,
    }


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm", "sglang"])
async def test_an_agent_that_names_no_sampling_is_sampled_with_brims_defaults(kind, anyio_backend):
    got = await applied(kind, {})
    default = Sampling()
    penalty = "repeat_penalty" if kind in ("ollama", "llamacpp") else "repetition_penalty"
    temperature, top_k = default.temperature, default.top_k
    if kind == "sglang" and default.temperature == 0:
        temperature, top_k = 1.0, 1  # SGLang samples "temperature 0" as top_k 1
    assert got["temperature"] == temperature  # not vLLM's 1.0, nor Ollama's 0.8
    assert (got["top_p"], got["top_k"], got["min_p"], got[penalty]) == (
        default.top_p,
        top_k,
        default.min_p,
        default.repeat_penalty,
    )
    # No seed set: the engine draws a fresh one per answer.
    assert got.get("seed", got.get("sampling_seed")) in (None, -1, 0xFFFFFFFF)


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm", "sglang"])
async def test_top_k_off_is_taken_as_no_cut_by_every_engine(kind, anyio_backend):
    """0 is "off" to llama.cpp, Ollama and vLLM; SGLang refuses 0 and takes -1."""
    no_cut = {"ollama": {0}, "llamacpp": {0, -1}, "vllm": {0, -1}, "sglang": {SGLANG_TOP_K_ALL}}
    got = await applied(kind, {"top_k": 0, "temperature": 0.5})
    assert got["top_k"] in no_cut[kind]


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm", "sglang"])
async def test_a_side_request_keeps_its_temperature_and_the_agents_cuts(kind, anyio_backend):
    got = await applied(kind, OWN, temperature=0.1)
    penalty = "repeat_penalty" if kind in ("ollama", "llamacpp") else "repetition_penalty"
    assert got["temperature"] == 0.1
    assert (got["top_p"], got["min_p"], got[penalty]) == (0.8, 0.1, 1.05)
