"""The model's maker's sampling, where each engine keeps it, reaches the answer: an agent that
sets nothing sends nothing that overrides it, an agent's own value is sent, and `/context`
names whose each value is. Brim's measured defaults still go to the bundled model, and to a
vLLM model folder that names nothing (vLLM would sample at temperature 1.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import AgentConfig, default_agent
from engine.providers.base import ChatOptions
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.providers.sampling import BRIM_DEFAULTS, Sampling
from engine.session import provider_for
from engine.session.engine_calls import probe_window
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeOllama, FakeVllm
from tests.helpers.fake_ollama import OllamaModel
from tests.helpers.gguf_sampling import copy_with_sampling
from tests.helpers.tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.anyio

QWEN = "qwen3:8b"
MODELFILE = {"temperature": 0.6, "top_k": 20, "top_p": 0.95}
SAMPLING_KEYS = {"temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed"}


async def ollama_turn(agent_values: dict[str, object]):
    model = OllamaModel(QWEN, parameters=MODELFILE, capabilities=("completion", "thinking"))
    with FakeOllama([model]) as fake:
        agent = AgentConfig(
            name="a", provider="ollama", base_url=fake.url, model=QWEN, **agent_values
        )
        provider = provider_for(agent)
        try:
            await provider.report(QWEN)
            await chat(provider, QWEN, options=ChatOptions(max_tokens=8, sampling=agent.sampling))
            described = provider.sampling_plan(QWEN, agent.sampling)
        finally:
            await provider.aclose()
        (request,) = fake.chat_requests
        return request, described


async def test_ollama_an_agent_that_sets_nothing_is_sampled_with_the_modelfiles(anyio_backend):
    request, plan = await ollama_turn({})
    sent = request.body.get("options") or {}
    assert not SAMPLING_KEYS & set(sent)  # nothing that would override the Modelfile
    assert {k: request.sampling[k] for k in MODELFILE} == MODELFILE
    assert plan.describe().startswith(
        "temperature 0.6 (model) · top_p 0.95 (model) · top_k 20 (model) · "
        "min_p default (engine) · repeat_penalty default (engine)"
    )
    assert plan.warnings() == []


async def test_ollama_an_agents_own_value_is_sent_and_the_rest_left_to_the_modelfile(
    anyio_backend,
):
    request, plan = await ollama_turn({"temperature": 0.0, "seed": 4})
    sent = request.body["options"]
    assert {k: sent[k] for k in SAMPLING_KEYS & set(sent)} == {"temperature": 0.0, "seed": 4}
    assert (request.sampling["temperature"], request.sampling["top_k"]) == (0.0, 20)
    assert plan.describe().startswith("temperature 0 (agent) · top_p 0.95 (model)")
    # The model thinks (Ollama's `thinking` capability) and the agent made it greedy.
    assert len(plan.warnings()) == 1


async def vllm_turn(folder: Path) -> tuple[dict[str, object], str, dict[str, object]]:
    with FakeVllm(str(folder)) as fake:
        agent = AgentConfig(name="v", provider="vllm", base_url=fake.url, model=str(folder))
        provider = provider_for(agent)
        try:
            await provider.report(agent.model)
            await chat(
                provider, agent.model, options=ChatOptions(max_tokens=8, sampling=agent.sampling)
            )
            described = provider.sampling_plan(agent.model, agent.sampling).describe()
        finally:
            await provider.aclose()
        (request,) = fake.chat_requests
        return request.body, described, request.sampling


async def test_vllm_a_folder_naming_nothing_is_sent_brims_defaults(tmp_path, anyio_backend):
    body, described, _ = await vllm_turn(tmp_path)
    assert body["temperature"] == BRIM_DEFAULTS.temperature  # not vLLM's own 1.0
    assert body["repetition_penalty"] == BRIM_DEFAULTS.repeat_penalty
    assert described.startswith("temperature 0 (Brim)")


async def test_vllm_a_folder_with_a_generation_config_is_left_to_it(tmp_path, anyio_backend):
    config = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "bos_token_id": 1}
    (tmp_path / "generation_config.json").write_text(json.dumps(config), encoding="utf-8")
    body, described, applied = await vllm_turn(tmp_path)
    assert not SAMPLING_KEYS & set(body) and "repetition_penalty" not in body
    assert {k: applied[k] for k in ("temperature", "top_p", "top_k")} == {
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
    }
    assert described.startswith("temperature 0.6 (model) · top_p 0.95 (model) · top_k 20")


def test_the_embedded_engine_sends_the_gguf_makers_sampling(tmp_path):
    tiny = write_tiny_gguf(tmp_path / "t.gguf", chat_template="<think>{{ x }}")
    gguf = copy_with_sampling(tiny, tmp_path / "qwen-like.gguf", **MODELFILE)
    plan = EmbeddedProvider(model_path=str(gguf)).sampling_plan("", Sampling())
    assert plan.send == Sampling(
        temperature=0.6, top_p=0.95, top_k=20, min_p=0.05, repeat_penalty=1.05
    )
    assert plan.thinks is True
    assert plan.describe().startswith("temperature 0.6 (model)")


@pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed")
def test_the_bundled_model_is_sent_the_same_sampling_as_before():
    """The default agent on SmolLM2: temperature 0, top_k 40, top_p 0.9, min_p 0.05, repeat
    penalty 1.05, as every request carried before the maker's sampling came first."""
    agent = default_agent()
    provider = provider_for(agent)
    sent = provider.sampling_plan(agent.model, agent.sampling).send
    assert sent == Sampling(temperature=0.0, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.05)


async def test_a_thinking_model_made_greedy_is_warned_about_at_the_start(anyio_backend):
    model = OllamaModel(QWEN, parameters=MODELFILE, capabilities=("completion", "thinking"))
    with FakeOllama([model]) as fake:
        warned = {}
        for temperature in (0.0, None):
            agent = AgentConfig(
                name="a", provider="ollama", base_url=fake.url, model=QWEN, temperature=temperature
            )
            provider = provider_for(agent)
            try:
                resolution = await probe_window(provider, agent)
            finally:
                await provider.aclose()
            warned[temperature] = [w for w in resolution.warnings if "thinks" in w]
    assert len(warned[0.0]) == 1 and "never to decode them greedily" in warned[0.0][0]
    assert warned[None] == []  # the Modelfile's 0.6
