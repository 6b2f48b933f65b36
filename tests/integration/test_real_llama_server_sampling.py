"""The real llama-server samples with what Brim sends: the agent's seed makes an answer at a
high temperature repeat, and the server's own record of the request (`/slots`) holds every
setting under llama-server's names."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import httpx
import pytest

from bench._llama_server import RealLlamaServer
from engine.messages import system, user
from engine.providers.base import ChatOptions, TextDelta
from engine.providers.registry import make_provider
from engine.providers.sampling import Sampling

pytestmark = [pytest.mark.slow, pytest.mark.llama_server]

PROMPT = [system("You are a storyteller."), user("Begin a story about a lighthouse keeper.")]
WILD = Sampling(temperature=1.5, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0)


def answers(url: str, samplings: list[Sampling]) -> list[str]:
    async def scenario() -> list[str]:
        provider = make_provider("llamacpp", url)
        out = []
        try:
            for sampling in samplings:
                options = ChatOptions(max_tokens=24, sampling=sampling)
                parts = [
                    i.text
                    async for i in provider.stream_chat("", PROMPT, options)
                    if isinstance(i, TextDelta)
                ]
                out.append("".join(parts))
        finally:
            await provider.aclose()
        return out

    return asyncio.run(scenario())


def test_a_seed_repeats_an_answer_at_a_high_temperature_and_another_seed_does_not(
    llama_server: RealLlamaServer,
):
    first, again, other, third = answers(
        llama_server.url,
        [
            replace(WILD, seed=11),
            replace(WILD, seed=11),
            replace(WILD, seed=12),
            replace(WILD, seed=13),
        ],
    )
    assert first == again
    assert {other, third} - {first}


def test_the_server_records_every_setting_brim_sent_under_its_own_names(
    llama_server: RealLlamaServer,
):
    sent = Sampling(temperature=0.35, top_p=0.75, top_k=17, min_p=0.08, repeat_penalty=1.3, seed=5)
    answers(llama_server.url, [sent])
    slots = httpx.get(f"{llama_server.url}/slots", timeout=10).json()
    used = [s["params"] for s in slots if s.get("params", {}).get("seed") == 5]
    assert used, slots
    params = used[0]
    assert params["temperature"] == pytest.approx(0.35)
    assert params["top_p"] == pytest.approx(0.75)
    assert params["top_k"] == 17
    assert params["min_p"] == pytest.approx(0.08)
    assert params["repeat_penalty"] == pytest.approx(1.3)
