"""The doubles are as hard as the engines where the window is concerned: a lazily loaded
Ollama model, prompt_eval_count by version, llama-server rejecting below its /props, and the
404 bodies each engine really sends. Plus the providers reading those behaviours right."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from engine.messages import user
from engine.providers.base import ChatOptions, StreamDone
from engine.providers.llamacpp import LlamaCppProvider
from engine.providers.ollama import OllamaProvider
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeVllm, OllamaModel

FIXTURES = Path("/work/shared/reference/fixtures")
HISTORY = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi " * 200}]
MODEL = "llama3.1:8b"


def _chat(fake: FakeOllama, messages: list[dict], **options: int) -> dict:
    body = {"model": MODEL, "messages": messages, "stream": False}
    if options:
        body["options"] = options
    return httpx.post(f"{fake.url}/api/chat", json=body).json()


def _ps(fake: FakeOllama) -> list[dict]:
    return httpx.get(f"{fake.url}/api/ps").json()["models"]


def test_an_ollama_model_is_absent_from_api_ps_until_the_first_chat_loads_it_at_the_default():
    with FakeOllama([OllamaModel(MODEL)], default_num_ctx=4096) as fake:
        assert _ps(fake) == []
        _chat(fake, HISTORY)
        assert [(m["name"], m["context_length"]) for m in _ps(fake)] == [(MODEL, 4096)]
        _chat(fake, HISTORY, num_ctx=8192)  # another num_ctx reloads it
        assert [m["context_length"] for m in _ps(fake)] == [8192]
        assert fake.reloads == 1


def test_ollama_0_30_0_reports_only_what_the_prompt_cache_did_not_serve():
    follow_up = [
        *HISTORY,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    with FakeOllama([OllamaModel(MODEL)], version="0.30.0") as old:
        first = _chat(old, HISTORY)["prompt_eval_count"]
        second = _chat(old, follow_up)["prompt_eval_count"]
    with FakeOllama([OllamaModel(MODEL)], version="0.33.0") as new:
        whole_first = _chat(new, HISTORY)["prompt_eval_count"]
        whole_second = _chat(new, follow_up)["prompt_eval_count"]
    assert first == whole_first  # nothing cached yet: the whole prompt
    assert whole_second > whole_first
    assert second < 20 < whole_second  # only the new part was evaluated


def _prompt_counts(version: str) -> tuple[list[int | None], list[int | None]]:
    """What the provider reports as two prompts' sizes, and what the fake evaluated."""

    async def go() -> tuple[list[int | None], list[int | None]]:
        with FakeOllama([OllamaModel(MODEL)], version=version) as fake:
            provider = OllamaProvider(fake.url)
            try:
                await provider.report(MODEL)
                counts = []
                for text in ("hi " * 50, "hi " * 50 + "more"):
                    async for item in provider.stream_chat(MODEL, [user(text)], ChatOptions()):
                        if isinstance(item, StreamDone):
                            counts.append(item.usage.prompt_tokens)
                return counts, [r.prompt_tokens for r in fake.chat_requests]
            finally:
                await provider.aclose()

    return asyncio.run(go())


def test_the_ollama_provider_does_not_take_0_30_0s_count_for_the_prompt():
    reported, _ = _prompt_counts("0.30.0")
    assert reported == [None, None]


@pytest.mark.parametrize("version", ["0.5.7", "0.24.0", "0.30.1", "0.33.0"])
def test_the_ollama_provider_takes_every_other_versions_count_for_the_whole_prompt(version):
    reported, sent = _prompt_counts(version)
    assert reported == sent


def test_the_ollama_provider_reads_the_loaded_window_only_once_a_chat_loaded_it():
    async def go() -> tuple[int | None, int | None]:
        with FakeOllama([OllamaModel(MODEL)], default_num_ctx=4096) as fake:
            provider = OllamaProvider(fake.url)
            try:
                before = await provider.loaded_window(MODEL)
                async for _ in provider.stream_chat(MODEL, [user("hi")], ChatOptions()):
                    pass
                return before, await provider.loaded_window(MODEL)
            finally:
                await provider.aclose()

    assert asyncio.run(go()) == (None, 4096)


@pytest.mark.parametrize(
    ("make", "status", "body"),
    [
        (FakeOllama, 404, b"404 page not found"),
        (
            FakeLlamaServer,
            404,
            b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}',
        ),
        (FakeVllm, 404, b'{"detail":"Not Found"}'),
    ],
)
def test_an_unknown_path_gets_the_404_body_the_engine_sends(make, status, body):
    with make() as fake:
        answer = httpx.get(f"{fake.url}/no/such/path")
    assert (answer.status_code, answer.content) == (status, body)


def test_llama_servers_health_says_503_while_loading_and_the_provider_waits_on_it():
    async def go() -> tuple[bool, bool]:
        with FakeLlamaServer(loading=True) as fake:
            provider = LlamaCppProvider(fake.url)
            try:
                loading = await provider.ready()
                fake.loading = False
                return loading, await provider.ready()
            finally:
                await provider.aclose()

    assert asyncio.run(go()) == (False, True)


def test_a_llama_server_build_without_health_is_waited_for_on_props():
    async def go() -> tuple[bool, bool]:
        with FakeLlamaServer(loading=True) as fake:
            fake._routes.pop(("GET", "/health"))  # an older build: /props 503s while loading
            provider = LlamaCppProvider(fake.url)
            try:
                loading = await provider.ready()
                fake.loading = False
                return loading, await provider.ready()
            finally:
                await provider.aclose()

    assert asyncio.run(go()) == (False, True)
