"""The real llama-server serving a GGUF whose maker names its sampling (`general.sampling.temp
0.6`, `top_k 20`, `top_p 0.95`, written with the gguf package's own copy_with_new_metadata):
it shows them in `/props` as its defaults; an agent that sets nothing sends none of them, and
the server samples the answer with the model's (its `/slots` record of the request); an
agent's own value is sent and used; `/context` names whose each value is. The bundled model,
served by the same server, still gets Brim's measured defaults in every request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench._llama_server import RealLlamaServer, start_llama_server
from engine.messages import system, user
from engine.providers.base import ChatOptions
from engine.providers.embedded import default_model_path
from engine.providers.registry import make_provider
from engine.providers.sampling import BRIM_DEFAULTS, Sampling
from tests.helpers.cli import run_brim
from tests.helpers.gguf_sampling import copy_with_sampling
from tests.helpers.recording_proxy import RecordingProxy

pytestmark = [pytest.mark.slow, pytest.mark.llama_server]

MAKERS = {"temperature": 0.6, "top_k": 20, "top_p": 0.95}
PROMPT = [system("You are terse."), user("Name a colour.")]
SAMPLING_FIELDS = {"temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed"}


@pytest.fixture(scope="module")
def makers_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    """One slot, a copy of the bundled GGUF under a name of its own (not the bundled one)."""
    folder = tmp_path_factory.mktemp("makers-sampling")
    source = default_model_path()
    assert source is not None, "the bundled model is not installed"
    model = copy_with_sampling(Path(source), folder / "makers-own.gguf", **MAKERS)
    server = start_llama_server(folder, ctx=2048, parallel=1, model=model)
    try:
        yield server
    finally:
        server.stop()


def turn(url: str, sampling: Sampling) -> tuple[dict[str, Any], str]:
    """One short answer through a recording proxy: the body Brim sent, and /context's line."""

    async def scenario() -> tuple[dict[str, Any], str]:
        with RecordingProxy(url) as proxy:
            provider = make_provider("llamacpp", proxy.url)
            try:
                await provider.report("")
                options = ChatOptions(max_tokens=4, sampling=sampling)
                async for _ in provider.stream_chat("", PROMPT, options):
                    pass
                described = provider.sampling_plan("", sampling).describe()
            finally:
                await provider.aclose()
            (chat,) = proxy.chats
            return chat.body, described

    return asyncio.run(scenario())


def slot_params(url: str) -> dict[str, Any]:
    (slot,) = httpx.get(f"{url}/slots", timeout=10).json()
    return dict(slot["params"])


def test_the_server_shows_the_models_sampling_as_its_defaults(makers_server: RealLlamaServer):
    props = httpx.get(f"{makers_server.url}/props", timeout=10).json()
    params = props["default_generation_settings"]["params"]
    assert params["temperature"] == pytest.approx(0.6)
    assert params["top_k"] == 20
    assert params["top_p"] == pytest.approx(0.95)


def test_an_agent_that_sets_nothing_is_sampled_with_the_models(makers_server: RealLlamaServer):
    body, described = turn(makers_server.url, Sampling())
    assert not SAMPLING_FIELDS & set(body)
    used = slot_params(makers_server.url)
    assert (used["temperature"], used["top_k"], used["top_p"]) == (
        pytest.approx(0.6),
        20,
        pytest.approx(0.95),
    )
    assert described == (
        "temperature 0.6 (model) · top_p 0.95 (model) · top_k 20 (model) · "
        "min_p 0.05 (engine) · repeat_penalty 1 (engine) · seed new each answer"
    )


def test_an_agents_own_value_is_sent_and_used(makers_server: RealLlamaServer):
    body, described = turn(makers_server.url, Sampling(temperature=0.2))
    assert {k: body[k] for k in SAMPLING_FIELDS & set(body)} == {"temperature": 0.2}
    used = slot_params(makers_server.url)
    assert (used["temperature"], used["top_k"]) == (pytest.approx(0.2), 20)
    assert described.startswith("temperature 0.2 (agent) · top_p 0.95 (model)")


def test_the_bundled_model_still_gets_brims_defaults(llama_server: RealLlamaServer):
    body, described = turn(llama_server.url, Sampling())
    assert {k: body[k] for k in SAMPLING_FIELDS & set(body)} == {
        "temperature": BRIM_DEFAULTS.temperature,
        "top_p": BRIM_DEFAULTS.top_p,
        "top_k": BRIM_DEFAULTS.top_k,
        "min_p": BRIM_DEFAULTS.min_p,
        "repeat_penalty": BRIM_DEFAULTS.repeat_penalty,
    }
    assert described.startswith("temperature 0 (Brim)")


def test_context_in_a_headless_chat_names_the_models_values(
    makers_server: RealLlamaServer, tmp_path: Path
):
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True)
    (agents / "makers.toml").write_text(
        f'name = "makers"\nprovider = "llamacpp"\nbase_url = "{makers_server.url}"\n'
        "max_tokens = 8\ntop_k = 30\n",
        encoding="utf-8",
    )
    run = run_brim(
        ["chat", "--headless", "--agent", "makers", "--no-memory", "--ephemeral"],
        data_dir=tmp_path,
        stdin="Name a colour.\n/context\n",
    )
    assert run.returncode == 0, run.stderr
    (snapshot,) = [r for r in run.of_type("context_report") if r["snapshot"]]
    assert (
        "Sampling: temperature 0.6 (model) · top_p 0.95 (model) · top_k 30 (agent) · "
        "min_p 0.05 (engine) · repeat_penalty 1 (engine) · seed new each answer"
    ) in snapshot["lines"]
