"""The embedded engine's child samples with what each request says: its seed, its cuts and
its penalty reach llama.cpp's sampler (the real bundled model, in the real child).

Each cut is shown working by the one thing it must do at a high temperature: keep only the
likeliest token, so the answer is the greedy one whatever the seed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from engine.messages import Message, system, user
from engine.providers.base import ChatOptions, TextDelta
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.providers.sampling import Sampling

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed"),
]

PROMPT = [system("You are a storyteller."), user("Begin a story about a lighthouse keeper.")]
# No cut at all and a high temperature: every seed draws its own answer.
WILD = Sampling(temperature=1.5, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0)
TOKENS = 16


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedProvider]:
    provider = EmbeddedProvider(n_ctx=1024)
    yield provider
    asyncio.run(provider.aclose())


async def answer(
    provider: EmbeddedProvider, sampling: Sampling, prompt: list[Message] = PROMPT
) -> str:
    options = ChatOptions(max_tokens=TOKENS, sampling=sampling)
    stream = provider.stream_chat("", prompt, options)
    return "".join([i.text async for i in stream if isinstance(i, TextDelta)])


def seeded(seed: int | None, **changes: Any) -> Sampling:
    return replace(WILD, seed=seed, **changes)


async def test_a_seed_gives_the_same_answer_twice_and_another_seed_another(embedded):
    first = await answer(embedded, seeded(11))
    again = await answer(embedded, seeded(11))
    others = {await answer(embedded, seeded(s)) for s in (12, 13)}
    assert first == again
    assert others - {first}, "other seeds drew the same answer"


async def test_after_a_seeded_answer_an_unseeded_one_draws_a_fresh_seed(embedded):
    await answer(embedded, seeded(11))
    unseeded = [await answer(embedded, seeded(None)) for _ in range(2)]
    assert unseeded[0] != unseeded[1]


async def test_each_cut_reaches_the_sampler(embedded):
    greedy = await answer(embedded, seeded(None, temperature=0.0))
    assert await answer(embedded, seeded(21)) != greedy  # this seed, uncut, draws otherwise
    for cut in ({"top_k": 1}, {"top_p": 0.01}, {"min_p": 1.0}):
        assert await answer(embedded, seeded(21, **cut)) == greedy, cut


async def test_the_repeat_penalty_reaches_the_sampler(embedded):
    prompt = [user("Write the word 'cat' twenty times, separated by spaces.")]
    plain = await answer(embedded, seeded(None, temperature=0.0), prompt)
    penalised = await answer(embedded, seeded(None, temperature=0.0, repeat_penalty=2.0), prompt)
    assert plain.lower().count("cat") > penalised.lower().count("cat")
