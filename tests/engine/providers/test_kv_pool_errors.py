"""llama-server's shared KV pool running dry is its own failure, not a server crash and not a
prompt too long for the window. Bodies as the real server sent them (b-2026 build, default
slots, -c 2048, three ~1,300-token requests at once)."""

from __future__ import annotations

import asyncio
import json

from engine.config import default_agent
from engine.messages import user
from engine.providers.base import ChatOptions
from engine.providers.classify import classify_http, classify_payload
from engine.providers.errors import ContextOverflow, KvPoolFull
from engine.providers.llamacpp import LlamaCppProvider
from engine.session import probe_window, provider_for
from tests.helpers.fake_engines import FakeLlamaServer, Reply

REAL_500 = (
    '{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}'
)
OLDER = {
    "error": {
        "code": 500,
        "message": "Input prompt is too big compared to KV size. Please try increasing KV size.",
        "type": "server_error",
    }
}


def test_the_real_500_is_the_shared_pool_running_dry():
    error = classify_http(500, REAL_500, engine="llama-server", url="http://127.0.0.1:8080")
    assert isinstance(error, KvPoolFull) and error.retryable
    assert error.kind == "kv_pool_full"


def test_the_same_error_inside_a_stream_and_the_older_wording_are_too():
    streamed = classify_payload(
        json.loads(REAL_500), engine="llama-server", url="http://h:8080", status=200
    )
    older = classify_payload(OLDER, engine="llama-server", url="http://h:8080", status=500)
    assert isinstance(streamed, KvPoolFull) and isinstance(older, KvPoolFull)


def test_a_prompt_longer_than_the_slot_is_still_an_overflow():
    body = {
        "error": {
            "code": 400,
            "message": "request (2521 tokens) exceeds the available context size (2048 tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 2521,
            "n_ctx": 2048,
        }
    }
    error = classify_payload(body, engine="llama-server", url="http://h:8080", status=400)
    assert isinstance(error, ContextOverflow) and not isinstance(error, KvPoolFull)


def test_a_pool_error_mid_answer_reaches_brim_as_one():
    async def go() -> BaseException | None:
        provider = LlamaCppProvider(fake.url)
        try:
            async for _ in provider.stream_chat("m", [user("hi")], ChatOptions()):
                fake.pool.cells = 0  # another client's request took the rest meanwhile
        except KvPoolFull as exc:
            return exc
        finally:
            await provider.aclose()
        return None

    with FakeLlamaServer(n_ctx=2048) as fake:
        assert fake.pool is not None
        # An answer long and slow enough to be still streaming when the pool runs dry.
        fake.default_reply = Reply(text="word " * 200, token_delay=0.01)
        error = asyncio.run(go())
    assert isinstance(error, KvPoolFull) and error.status == 200


def test_the_probe_says_the_default_slots_share_one_pool_and_what_that_means():
    async def go():  # type: ignore[no-untyped-def]
        agent = default_agent().with_changes(provider="llamacpp", base_url=fake.url, model="m")
        provider = provider_for(agent)
        try:
            return (await probe_window(provider, agent)).to_probe_json()
        finally:
            await provider.aclose()

    with FakeLlamaServer(n_ctx=2048) as fake:
        shared = asyncio.run(go())
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        split = asyncio.run(go())
    assert (shared["slots"], shared["shared_pool"], shared["window"]) == (4, True, 2048)
    told = " ".join(shared["warnings"])
    assert "share one KV pool" in told and "Context size has been exceeded." in told
    assert "one at a time" in told and "--parallel" in told
    assert (split["slots"], split["shared_pool"], split["warnings"]) == (2, False, [])
