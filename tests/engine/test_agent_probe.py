"""The agent editor's Probe: the engine's real answer (fakes on loopback) laid out side by
side for the saved agent and the edits, with every warning the window rules give."""

from __future__ import annotations

import socket

import pytest

from engine.agent.probe import (
    EMBEDDED_NOT_PROBED,
    ProbeComparison,
    ProbeFailure,
    list_agent_models,
    probe_agent,
)
from engine.config import AgentConfig
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeSglang,
    FakeVllm,
    OllamaModel,
)

pytestmark = pytest.mark.anyio

OLLAMA_MODEL = "llama3.1:8b"
VLLM_MODEL = "Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def agent(provider: str, url: str, model: str, **settings: object) -> AgentConfig:
    return AgentConfig(name="a", provider=provider, base_url=url, model=model, **settings)


def rows_of(result: ProbeComparison) -> dict[str, tuple[object, object]]:
    return {row.key: (row.saved, row.edited) for row in result.rows()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_pin_above_what_vllm_serves_is_ignored_and_the_served_window_is_effective():
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as fake:
        saved = agent("vllm", fake.url, VLLM_MODEL)
        result = await probe_agent(saved.with_changes(num_ctx=65536), saved)

    assert isinstance(result, ProbeComparison)
    assert (result.window, result.source) == (32768, "server")
    assert any("65536" in w and "max_model_len" in w and "ignored" in w for w in result.warnings)
    rows = rows_of(result)
    assert rows["served"] == (32768, 32768)
    assert rows["pinned"] == (None, 65536)
    assert rows["window"] == (32768, 32768)


async def test_a_pin_within_what_sglang_serves_becomes_the_window():
    with FakeSglang() as fake:
        edited = agent("sglang", fake.url, fake.model, num_ctx=8192)
        result = await probe_agent(edited)

    assert isinstance(result, ProbeComparison)
    assert (result.window, result.source) == (8192, "pinned")
    assert result.saved is None
    assert result.warnings == []


async def test_an_unpinned_ollama_agent_is_told_to_pin_and_a_new_pin_says_the_model_reloads():
    with FakeOllama([OllamaModel(OLLAMA_MODEL, context_length=131072)]) as fake:
        fake.load(OLLAMA_MODEL, 4096)
        saved = agent("ollama", fake.url, OLLAMA_MODEL)
        result = await probe_agent(saved.with_changes(num_ctx=16384), saved)

    assert isinstance(result, ProbeComparison)
    assert result.saved is not None
    assert any("Pin num_ctx" in w for w in result.saved.warnings)  # the saved agent: no pin
    assert (result.saved.window, result.saved.source) == (4096, "server")
    assert (result.window, result.source) == (16384, "pinned")
    assert any("reloads it with num_ctx 16384" in w for w in result.warnings)
    assert not any("Pin num_ctx" in w for w in result.warnings)
    assert rows_of(result)["model_max"] == (131072, 131072)


async def test_an_ollama_pin_above_the_training_length_warns():
    with FakeOllama([OllamaModel(OLLAMA_MODEL, context_length=8192)]) as fake:
        result = await probe_agent(agent("ollama", fake.url, OLLAMA_MODEL, num_ctx=32768))

    assert isinstance(result, ProbeComparison)
    assert any("training length of 8192" in w for w in result.warnings)
    assert rows_of(result)["served"] == (None, None)
    assert next(r for r in result.rows() if r.key == "served").unset == "not loaded"


async def test_llama_server_slots_sharing_one_pool_are_warned_about_and_listed():
    with FakeLlamaServer(n_ctx=8192, slots=4, kv_unified=True) as fake:
        result = await probe_agent(agent("llamacpp", fake.url, fake.model))

    assert isinstance(result, ProbeComparison)
    assert any("share one KV pool" in w for w in result.warnings)
    assert rows_of(result)["slots"] == (None, 4)


async def test_a_ceiling_lowers_the_effective_window_and_names_itself_the_source():
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as fake:
        saved = agent("vllm", fake.url, VLLM_MODEL)
        result = await probe_agent(saved.with_changes(max_context_tokens=12000), saved)

    assert isinstance(result, ProbeComparison)
    assert rows_of(result)["window"] == (32768, 12000)
    assert rows_of(result)["source"] == ("server", "ceiling")


async def test_settings_that_will_not_work_as_expected_are_warned_about_too():
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as fake:
        edited = agent("vllm", fake.url, VLLM_MODEL, num_ctx=8192, compaction_reserve_tokens=9000)
        result = await probe_agent(edited)

    assert isinstance(result, ProbeComparison)
    assert any("every request would compact" in w for w in result.warnings)


async def test_a_saved_agent_on_another_engine_gets_no_saved_column():
    with FakeVllm(VLLM_MODEL) as fake, FakeSglang() as other:
        saved = agent("sglang", other.url, other.model)
        result = await probe_agent(
            saved.with_changes(provider="vllm", base_url=fake.url, model=VLLM_MODEL), saved
        )

    assert isinstance(result, ProbeComparison)
    assert result.saved is None
    assert all(row.saved is None for row in result.rows())


async def test_an_engine_that_does_not_answer_is_a_failure_with_its_address_not_an_exception():
    url = f"http://127.0.0.1:{free_port()}"
    result = await probe_agent(agent("ollama", url, OLLAMA_MODEL, num_ctx=8192))

    assert isinstance(result, ProbeFailure)
    assert result.kind == "unreachable"
    assert url.removeprefix("http://") in result.message


async def test_a_model_the_engine_does_not_have_is_a_failure_naming_it():
    with FakeOllama([OllamaModel(OLLAMA_MODEL)]) as fake:
        result = await probe_agent(agent("ollama", fake.url, "nosuch:7b"))

    assert isinstance(result, ProbeFailure)
    assert result.kind == "model_not_found"
    assert "nosuch" in result.message


async def test_the_embedded_engine_is_not_loaded_again_and_says_so():
    result = await probe_agent(AgentConfig(name="e", provider="embedded", num_ctx=4096))

    assert isinstance(result, ProbeComparison)
    assert (result.window, result.source) == (4096, "pinned")
    assert result.notes == (EMBEDDED_NOT_PROBED,)


async def test_the_model_picker_lists_what_the_engine_serves():
    with FakeOllama([OllamaModel(OLLAMA_MODEL), OllamaModel("qwen3:8b", arch="qwen3")]) as fake:
        models = await list_agent_models(agent("ollama", fake.url, ""))

    assert not isinstance(models, ProbeFailure)
    assert sorted(m.id for m in models) == ["llama3.1:8b", "qwen3:8b"]


async def test_listing_models_of_an_engine_that_is_down_is_a_failure():
    url = f"http://127.0.0.1:{free_port()}"
    models = await list_agent_models(agent("vllm", url, ""))

    assert isinstance(models, ProbeFailure)
    assert models.kind == "unreachable"


async def test_the_embedded_picker_offers_the_models_other_tools_keep_by_path(
    tmp_path, monkeypatch
):
    home = tmp_path / "home"
    lms = home / ".lmstudio" / "models" / "someone" / "tiny"
    lms.mkdir(parents=True)
    (lms / "tiny-q4.gguf").write_bytes(b"GGUF")  # listed by path, never opened
    (lms / "notes.txt").write_text("not a model")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE"):
        monkeypatch.delenv(name, raising=False)

    models = await list_agent_models(AgentConfig(name="e", provider="embedded"))

    assert not isinstance(models, ProbeFailure)
    ids = [m.id for m in models]
    assert str(lms / "tiny-q4.gguf") in ids
    assert not any(i.endswith("notes.txt") for i in ids)
    assert ids[0] == "SmolLM2-135M-Instruct.Q4_1"  # the bundled models come first
