"""The embedded engine answers as the real llama-server does: the same GGUF, the same chat
template and the same greedy sampling give the same answers, turn by turn, in the trial's
seven-line conversation (resources/bench/seven_lines.txt), and every turn's prompt is the
same text and the same tokens on both.

llama-server runs as `brim chat --provider llamacpp` would meet it: `-c 1024 -np 1 --jinja`,
the embedded engine at the same 1,024. Before the embedded engine's penalty looked back into
the prompt (engine/providers/embedded_penalty.py) the two parted at the first answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from bench._llama_server import RealLlamaServer, llama_server_binary, start_llama_server
from engine.messages import Message, assistant, system, user
from engine.providers.base import ChatOptions, Provider, TextDelta
from engine.providers.embedded import EmbeddedProvider
from engine.providers.registry import make_provider
from engine.providers.sampling import Sampling
from engine.resources import resource_text

pytestmark = [
    pytest.mark.slow,
    pytest.mark.llama_server,
    pytest.mark.skipif(llama_server_binary() is None, reason="llama-server is not installed"),
]

LINES = resource_text("bench", "seven_lines.txt").splitlines()
SYSTEM = system(
    "You are Brim, a careful assistant. Keep answers short and concrete, say when you do not "
    "know something, and ask when a request is ambiguous."
)
# Brim's measured defaults for the bundled model, written out: the test is about the
# engines, not about which defaults Brim sends.
GREEDY = Sampling(temperature=0.0, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.05)
TOKENS = 64
WINDOW = 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    started = start_llama_server(
        tmp_path_factory.mktemp("parity"), ctx=WINDOW, parallel=1, extra_args=["--jinja"]
    )
    try:
        yield started
    finally:
        started.stop()


async def conversation(provider: Provider) -> list[tuple[list[Message], str]]:
    """Each turn's request and the answer to it; the answer joins the next request."""
    messages = [SYSTEM]
    turns = []
    for line in LINES:
        messages = [*messages, user(line)]
        stream = provider.stream_chat("", messages, ChatOptions(max_tokens=TOKENS, sampling=GREEDY))
        answer = "".join([i.text async for i in stream if isinstance(i, TextDelta)])
        turns.append((messages, answer))
        messages = [*messages, assistant(answer)]
    return turns


def both(url: str) -> tuple[list[tuple[list[Message], str]], list[tuple[list[Message], str]]]:
    async def run() -> tuple[list[tuple[list[Message], str]], list[tuple[list[Message], str]]]:
        embedded, served = EmbeddedProvider(n_ctx=WINDOW), make_provider("llamacpp", url)
        try:
            return await conversation(embedded), await conversation(served)
        finally:
            await embedded.aclose()
            await served.aclose()

    return asyncio.run(run())


def test_the_seven_lines_get_the_same_answers_on_both_engines_turn_by_turn(server):
    embedded, served = both(server.url)
    assert len(LINES) == 7
    assert [a for _, a in embedded] == [a for _, a in served]
    assert "Jupiter" in served[1][1]  # what the trial saw llama-server answer


def test_every_turns_prompt_is_the_same_text_and_tokens_on_both_engines(server):
    async def run() -> None:
        embedded, served = EmbeddedProvider(n_ctx=WINDOW), make_provider("llamacpp", server.url)
        try:
            messages = [SYSTEM]
            for line in LINES:
                messages = [*messages, user(line), assistant(f"An answer to: {line}")]
                request = messages[:-1]
                ours = await embedded.render_prompt("", request, [])
                theirs = await served.render_prompt("", request, [])
                assert ours is not None and theirs is not None
                assert ours.text == theirs.text
                async with httpx.AsyncClient() as client:
                    answer = await client.post(
                        f"{server.url}/tokenize",
                        json={"content": theirs.text, "add_special": True, "parse_special": True},
                    )
                assert await embedded.tokenize(ours.text, special=True) == answer.json()["tokens"]
                assert await embedded.count_prompt("", request, []) == len(answer.json()["tokens"])
        finally:
            await embedded.aclose()
            await served.aclose()

    asyncio.run(run())
