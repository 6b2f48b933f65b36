"""Every engine samples with the agent's settings, told in its own names; what the agent leaves
unset is not sent (engine/providers/sampling_source.py decides when Brim's fill in).

The doubles read the request as each engine does (tests/helpers/engine_sampling.py): a field
under another engine's name is dropped there, and what an engine refuses is a 400."""

from __future__ import annotations

import pytest

from engine.config import AgentConfig
from engine.providers.base import ChatOptions
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


# What each engine's double applies to a request that leaves every setting out.
ENGINE_OWN = {
    "ollama": {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0, "repeat_penalty": 1.0},
    "llamacpp": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05},
    "vllm": {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0},
    "sglang": {"temperature": 1.0, "top_p": 1.0, "min_p": 0.0},
}


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm", "sglang"])
async def test_an_agent_that_sets_nothing_leaves_the_sampling_to_a_model_that_may_name_its_own(
    kind, anyio_backend
):
    """Nothing learned about the model (no report; a vLLM or SGLang model folder Brim cannot
    read): no setting is sent, so the model's own (a Modelfile, a GGUF, a
    generation_config.json) applies, else the engine's."""
    got = await applied(kind, {})
    assert {k: got[k] for k in ENGINE_OWN[kind]} == ENGINE_OWN[kind]
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
