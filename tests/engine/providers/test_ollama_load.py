"""Ollama loads a model when asked with no messages, and says how long each request waited
for a load: the provider's load uses the body every request has (so nothing reloads), and
`/api/ps` gives the window and the expiry."""

from __future__ import annotations

import time

import pytest

from engine.messages import user
from engine.providers.errors import ServerError
from engine.providers.ollama import OllamaProvider
from engine.providers.ollama_answers import expiry
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeOllama, OllamaModel
from tests.helpers.fake_ollama import OUT_OF_MEMORY

pytestmark = pytest.mark.anyio
MODEL = "qwen3:8b"


@pytest.mark.parametrize(("pin", "version"), [(None, "0.33.0"), (8192, "0.33.0"), (None, "0.5.7")])
async def test_the_load_sends_the_options_every_request_sends_and_no_request_reloads(
    anyio_backend, pin: int | None, version: str
):
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], version=version) as fake:
        provider = OllamaProvider(fake.url, num_ctx=pin)
        try:
            await provider.report(MODEL)  # reads the version, which decides truncate/shift
            assert await provider.load_model(MODEL) is True
            loaded = await provider.loaded_model(MODEL)
            for turn in range(2):
                await chat(provider, MODEL, [user(f"turn {turn}")])
        finally:
            await provider.aclose()
        (load,) = fake.load_requests
        chats = fake.chat_requests

    assert load.body["messages"] == [] and "keep_alive" not in load.body

    def launch(body: dict) -> tuple:
        options = body.get("options") or {}
        return (options.get("num_ctx"), body.get("truncate"), body.get("shift"))

    assert {launch(r.body) for r in chats} == {launch(load.body)}
    strict = (False, False) if version != "0.5.7" else (None, None)  # 0.12.6 on takes them
    assert launch(load.body)[1:] == strict
    assert (fake.loads, fake.reloads) == ([(MODEL, pin or 4096)], 0)
    assert loaded is not None and loaded.window == (pin or 4096)
    assert loaded.expires_at is not None and loaded.expires_at > time.time()


async def test_load_duration_reaches_the_usage_and_is_long_only_for_the_request_that_loaded(
    anyio_backend,
):
    with FakeOllama([OllamaModel(MODEL)]) as fake:
        provider = OllamaProvider(fake.url)
        try:
            first = await chat(provider, MODEL, [user("one")])
            second = await chat(provider, MODEL, [user("two")])
        finally:
            await provider.aclose()
    assert first.done.usage.load_s == pytest.approx(1.25)
    assert second.done.usage.load_s is not None and 0 < second.done.usage.load_s < 0.01


async def test_a_load_the_server_refuses_is_an_error_brim_can_name(anyio_backend):
    with FakeOllama([OllamaModel(MODEL)], refuse_loads=OUT_OF_MEMORY) as fake:
        provider = OllamaProvider(fake.url)
        try:
            with pytest.raises(ServerError):
                await provider.load_model(MODEL)
        finally:
            await provider.aclose()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-08-21T16:47:07.933550123-07:00", 1787356027.93355),
        ("2026-08-21T23:47:07Z", 1787356027.0),
        ("0001-01-01T00:00:00Z", None),  # Go's zero time
        ("soon", None),
        (None, None),
    ],
)
def test_an_api_ps_expiry_is_read_as_seconds_since_the_epoch(text, expected) -> None:
    assert expiry(text) == (pytest.approx(expected) if expected else None)
