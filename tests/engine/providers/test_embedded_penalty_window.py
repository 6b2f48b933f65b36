"""The embedded engine's repeat penalty looks back into the prompt, as llama-server's does.

llama-server feeds every prompt token to a request's sampler before it samples the first
answer token, so the penalty (64 tokens back) already covers the question and the template's
markers; llama-cpp-python's own `generate` fed it only the tokens it sampled. With the
bundled model at temperature 0 that one difference made the two engines answer the same
conversation differently (docs/benchmarks.md, "The embedded engine and llama-server"). The
real bundled model in the real child."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from engine.messages import Message, assistant, system, user
from engine.providers.base import ChatOptions, TextDelta
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.providers.sampling import Sampling

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed"),
]

SYSTEM = system(
    "You are Brim, a careful assistant. Keep answers short and concrete, say when you do not "
    "know something, and ask when a request is ambiguous."
)
# Greedy and unpenalised, the model answers this with the user's own name:
# "Priya Raman, please."
INTRODUCTION = [SYSTEM, user("My name is Priya Raman.")]
SECOND_TURN = [*INTRODUCTION, assistant("Priya Raman, please."), user("What is my name?")]
PLAIN = Sampling(temperature=0.0, repeat_penalty=1.0)
# So strong that no token the penalty has seen stays the likeliest one.
STRONG = Sampling(temperature=0.0, repeat_penalty=1000.0)
WINDOW = 64  # llama.cpp's penalty_last_n: llama-server's and llama-cpp-python's default
TOKENS = 12


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedProvider]:
    provider = EmbeddedProvider(n_ctx=1024)
    yield provider
    asyncio.run(provider.aclose())


async def repeats(provider: EmbeddedProvider, messages: list[Message], s: Sampling) -> list[int]:
    """The answer's tokens that the penalty had in view when each was drawn: the 64 tokens
    before it, prompt and answer so far (the answer read back through the model's own
    tokenizer)."""
    rendered = await provider.render_prompt("", messages, [])
    assert rendered is not None
    prompt = await provider.tokenize(rendered.text, special=True)
    stream = provider.stream_chat("", messages, ChatOptions(max_tokens=TOKENS, sampling=s))
    text = "".join([i.text async for i in stream if isinstance(i, TextDelta)])
    answer = await provider.tokenize(text, special=True)
    seen = prompt + answer
    return [
        token
        for i, token in enumerate(answer)
        if token in seen[max(0, len(prompt) + i - WINDOW) : len(prompt) + i]
    ]


async def test_a_strong_penalty_keeps_the_first_answer_off_the_questions_own_words(embedded):
    assert await repeats(embedded, INTRODUCTION, PLAIN)  # unpenalised, it echoes the name
    assert await repeats(embedded, INTRODUCTION, STRONG) == []


async def test_a_later_turn_served_from_the_cache_is_penalised_for_the_earlier_turns(embedded):
    # The cache holds the first turn: only the new one is evaluated, yet the penalty looks
    # back across the turn boundary, as llama-server's does.
    await repeats(embedded, INTRODUCTION, PLAIN)
    assert await repeats(embedded, SECOND_TURN, PLAIN)
    assert await repeats(embedded, SECOND_TURN, STRONG) == []
