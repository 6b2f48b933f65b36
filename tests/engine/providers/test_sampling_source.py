"""Whose sampling a request carries, by engine, by what the model names and whether Brim bundles
it (engine/providers/sampling_source.py): the agent's own is always sent, the model's is left to
an engine that applies it, and Brim's measured defaults only where they belong."""

from __future__ import annotations

import pytest

from engine.providers.sampling import BRIM_DEFAULTS, Sampling
from engine.providers.sampling_source import ModelSampling, plan

QWEN = ModelSampling(named={"temperature": 0.6, "top_k": 20, "top_p": 0.95})
SERVER = {"temperature": 0.6, "top_k": 20, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}


@pytest.mark.parametrize("engine", ["embedded", "llamacpp", "ollama", "vllm", "sglang"])
def test_a_bundled_model_is_sent_brims_measured_defaults_on_every_engine(engine):
    got = plan(Sampling(), None, engine, bundled=True)
    assert got.send == BRIM_DEFAULTS
    assert {n: s.source for n, s in got.settings.items() if n != "seed"} == dict.fromkeys(
        ("temperature", "top_p", "top_k", "min_p", "repeat_penalty"), "Brim"
    )


@pytest.mark.parametrize("engine", ["llamacpp", "ollama", "vllm", "sglang"])
def test_a_server_applying_the_models_own_is_sent_nothing_the_agent_left_unset(engine):
    got = plan(Sampling(), QWEN, engine, bundled=False)
    assert got.send == Sampling()
    assert got.settings["temperature"].value == 0.6
    assert got.settings["temperature"].source == "model"
    assert got.settings["min_p"].source == "engine"


def test_the_agents_own_value_is_sent_and_the_rest_stays_the_models():
    got = plan(Sampling(temperature=0.2), QWEN, "ollama", bundled=False)
    assert got.send == Sampling(temperature=0.2)
    assert (got.settings["temperature"].value, got.settings["temperature"].source) == (
        0.2,
        "agent",
    )
    assert (got.settings["top_k"].value, got.settings["top_k"].source) == (20, "model")


@pytest.mark.parametrize("engine", ["embedded", "vllm"])
def test_the_agents_own_value_wins_over_brims_and_the_models(engine):
    got = plan(Sampling(temperature=0.7, seed=5), QWEN, engine, bundled=True)
    assert (got.send.temperature, got.send.seed, got.send.top_k) == (0.7, 5, 40)
    assert got.settings["temperature"].source == "agent"


def test_the_embedded_engine_is_sent_the_models_values_and_brims_for_the_rest():
    """Brim's own child applies nothing by itself: the GGUF's values travel in the request."""
    got = plan(Sampling(), QWEN, "embedded", bundled=False)
    assert got.send == Sampling(
        temperature=0.6, top_p=0.95, top_k=20, min_p=0.05, repeat_penalty=1.05
    )
    assert got.settings["top_p"].source == "model" and got.settings["min_p"].source == "Brim"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllm_with_a_folder_that_names_nothing_is_sent_brims_not_its_temperature_1(engine):
    got = plan(Sampling(), ModelSampling(), engine, bundled=False)
    assert got.send == BRIM_DEFAULTS


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllm_with_a_folder_brim_cannot_read_is_left_to_the_server(engine):
    got = plan(Sampling(), None, engine, bundled=False)
    assert got.send == Sampling()
    assert got.settings["temperature"].value is None
    assert got.settings["temperature"].source == "engine"


@pytest.mark.parametrize("engine", ["llamacpp", "ollama"])
def test_a_model_naming_nothing_on_llama_server_or_ollama_gets_the_engines_defaults(engine):
    got = plan(Sampling(), ModelSampling(engine=SERVER), engine, bundled=False)
    assert got.send == Sampling()


def test_context_names_each_value_and_its_source():
    model = ModelSampling(named=QWEN.named, engine=SERVER)
    line = plan(Sampling(repeat_penalty=1.1), model, "llamacpp", bundled=False).describe()
    assert line == (
        "temperature 0.6 (model) · top_p 0.95 (model) · top_k 20 (model) · "
        "min_p 0.05 (engine) · repeat_penalty 1.1 (agent) · seed new each answer"
    )
    unknown = plan(Sampling(), None, "vllm", bundled=False).describe()
    assert unknown.startswith("temperature default (engine) · top_p default (engine)")


def test_a_thinking_model_at_temperature_0_is_warned_about_and_at_its_own_it_is_not():
    thinking = ModelSampling(named=QWEN.named, thinks=True)
    greedy = plan(Sampling(temperature=0.0), thinking, "ollama", bundled=False)
    assert len(greedy.warnings()) == 1 and "temperature 0" in greedy.warnings()[0]
    assert plan(Sampling(), thinking, "ollama", bundled=False).warnings() == []
    plain = ModelSampling(named=QWEN.named, thinks=False)
    assert plan(Sampling(temperature=0.0), plain, "ollama", bundled=False).warnings() == []


def test_the_greedy_warning_tells_the_user_what_they_can_change():
    """The agent's own 0 can be unset; Brim's bundled default cannot (the agent's value
    overrides it), so the warning says whose 0 it is and never asks to unset what the
    agent did not set."""
    thinking = ModelSampling(thinks=True)
    (own,) = plan(Sampling(temperature=0.0), thinking, "llamacpp", bundled=False).warnings()
    (brims,) = plan(Sampling(), thinking, "llamacpp", bundled=True).warnings()
    assert "(agent)" in own and "unset the agent's temperature" in own
    assert "(Brim)" in brims and "unset" not in brims
    assert "set the agent's temperature" in brims
