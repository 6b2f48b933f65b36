"""The embedded engine with the real default model: llama-cpp-python in a child process.

One provider (one child, one loaded model) serves the whole module, so the suite costs one
model load; the tests that crash or reconfigure the engine make their own.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.messages import Message, system, user
from engine.providers.base import ChatOptions, StreamDone, StreamItem, TextDelta, Usage
from engine.providers.embedded import (
    CHILD_EXIT_GRACE_S,
    EmbeddedProvider,
    default_model_path,
)
from engine.providers.errors import ContextOverflow, ModelNotFound, ServerError

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed"),
]

MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"
QUESTION = [system("You answer in one short sentence."), user("What is the capital of France?")]
STORY = [user("Tell me a very long story about a dragon who learns to bake bread.")]


@dataclass
class Answer:
    text: str = ""
    deltas: int = 0
    done: StreamDone | None = None
    items: list[StreamItem] = field(default_factory=list)

    @property
    def usage(self) -> Usage:
        assert self.done is not None
        return self.done.usage


async def ask(provider: EmbeddedProvider, messages: list[Message], max_tokens: int = 16) -> Answer:
    answer = Answer()
    async for item in provider.stream_chat("", messages, ChatOptions(max_tokens=max_tokens)):
        answer.items.append(item)
        if isinstance(item, TextDelta):
            answer.text += item.text
            answer.deltas += 1
        elif isinstance(item, StreamDone):
            answer.done = item
    return answer


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def assert_goes_idle(pid: int) -> None:
    """The child stops computing: within a few seconds of being told (a loaded machine is
    slow to schedule it), a whole second passes in which it uses (almost) no CPU. A
    generation left running would keep it busy far longer: 1,500 tokens take many seconds."""
    used: list[float] = []
    for _ in range(6):
        before = cpu_seconds(pid)
        await asyncio.sleep(1.0)
        used.append(round(cpu_seconds(pid) - before, 2))
        if used[-1] < 0.25:
            return
    raise AssertionError(f"the child kept computing after the cancel: {used} CPU s per second")


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedProvider]:
    provider = EmbeddedProvider(n_ctx=2048)
    yield provider
    asyncio.run(provider.aclose())


async def test_the_engine_reports_the_context_it_allocated_and_the_training_length(
    embedded: EmbeddedProvider,
):
    report = await embedded.report("")
    assert (report.provider, report.model) == ("embedded", MODEL_ID)
    assert (report.served, report.model_max, report.slots) == (2048, 8192, 1)
    assert report.warnings == []
    models = await embedded.list_models()
    assert [(m.id, m.served_window, m.model_max) for m in models] == [(MODEL_ID, 2048, 8192)]


async def test_the_model_streams_a_real_answer_with_real_usage(embedded: EmbeddedProvider):
    answer = await ask(embedded, QUESTION, max_tokens=24)
    assert answer.text.strip()
    assert answer.deltas >= 2  # streamed, not delivered in one piece
    assert isinstance(answer.items[-1], StreamDone)
    usage = answer.usage
    assert usage.prompt_tokens == await embedded.count_prompt("", QUESTION, [])
    assert 1 <= usage.completion_tokens <= 24
    assert answer.done is not None
    assert answer.done.finish_reason == ("length" if usage.completion_tokens == 24 else "stop")
    assert usage.prompt_eval_s is not None and usage.prompt_eval_s > 0
    assert usage.eval_s is not None and usage.eval_s >= 0


async def test_a_request_that_repeats_the_previous_prompt_is_served_from_the_cache(
    embedded: EmbeddedProvider,
):
    first = await ask(embedded, QUESTION, max_tokens=8)
    again = await ask(embedded, QUESTION, max_tokens=8)
    assert again.usage.prompt_tokens == first.usage.prompt_tokens
    # llama-cpp-python re-evaluates the last prompt token to refresh its logits.
    assert again.usage.cached_tokens == again.usage.prompt_tokens - 1

    follow_up = [*QUESTION, Message("assistant", again.text), user("And of Spain?")]
    longer = await ask(embedded, follow_up, max_tokens=8)
    assert longer.usage.prompt_tokens > first.usage.prompt_tokens
    assert first.usage.prompt_tokens - 1 <= longer.usage.cached_tokens < longer.usage.prompt_tokens


async def test_a_prompt_longer_than_the_context_raises_context_overflow_with_the_numbers(
    embedded: EmbeddedProvider,
):
    messages = [user("Please summarise: " + " ".join(f"word{i}" for i in range(700)))]
    counted = await embedded.count_prompt("", messages, [])
    assert counted > 2048
    with pytest.raises(ContextOverflow) as caught:
        await ask(embedded, messages)
    assert (caught.value.prompt_tokens, caught.value.window) == (counted, 2048)
    assert f"({counted})" in caught.value.message
    assert (await ask(embedded, QUESTION, max_tokens=4)).text  # the engine is still fine


async def test_closing_the_stream_mid_answer_stops_the_child_and_the_next_request_works(
    embedded: EmbeddedProvider,
):
    received = ""
    async with aclosing(embedded.stream_chat("", STORY, ChatOptions(max_tokens=1500))) as stream:
        async for item in stream:
            if isinstance(item, TextDelta):
                received += item.text
                if len(received) > 20:
                    break
    pid = embedded.child_pid
    assert pid is not None
    await assert_goes_idle(pid)

    answer = await ask(embedded, QUESTION, max_tokens=12)
    assert answer.text.strip() and received not in answer.text
    assert embedded.child_pid == pid  # the same child served it: cancelling cost no restart


async def test_cancelling_the_task_stops_the_answer_promptly(embedded: EmbeddedProvider):
    first_delta = asyncio.Event()

    async def consume() -> None:
        async for item in embedded.stream_chat("", STORY, ChatOptions(max_tokens=1500)):
            if isinstance(item, TextDelta):
                first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), timeout=120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = embedded.child_pid
    assert pid is not None
    await assert_goes_idle(pid)
    assert (await ask(embedded, QUESTION, max_tokens=4)).text


async def test_cancelling_during_a_long_prompt_evaluation_aborts_it(embedded: EmbeddedProvider):
    # ~600 fresh prompt tokens take this machine seconds to evaluate.
    long_prompt = [user("Count these: " + " ".join(f"pebble{i}" for i in range(150)))]

    async def consume() -> None:
        async for _ in embedded.stream_chat("", long_prompt, ChatOptions(max_tokens=4)):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = embedded.child_pid
    assert pid is not None
    await assert_goes_idle(pid)

    # Whatever part of the prompt was evaluated before the abort is reused, never more.
    answer = await ask(embedded, long_prompt, max_tokens=1)
    assert answer.usage.cached_tokens is not None
    assert 0 <= answer.usage.cached_tokens < answer.usage.prompt_tokens


async def test_the_engines_tokens_match_the_tokenizer_brim_counts_with(
    embedded: EmbeddedProvider,
):
    text = "Grüße aus Köln — 東京タワー 🚀 <|im_end|> done"
    tokenizer = embedded.segment_tokenizer("")
    assert tokenizer is not None
    for special in (False, True):
        tokens = await embedded.tokenize(text, special=special)
        assert tokens == tokenizer.tokenize(text, special=special)
    assert len(await embedded.tokenize(text, special=True)) < len(await embedded.tokenize(text))


async def test_killing_the_child_mid_answer_is_a_server_error_and_the_next_request_restarts_it(
    anyio_backend: str,
):
    provider = EmbeddedProvider(n_ctx=1024)
    try:
        with pytest.raises(ServerError) as caught:
            async for item in provider.stream_chat("", STORY, ChatOptions(max_tokens=1000)):
                if isinstance(item, TextDelta):
                    victim = provider.child_pid
                    assert victim is not None
                    os.kill(victim, signal.SIGKILL)
        assert "the embedded engine crashed" in caught.value.message
        assert "SIGKILL" in caught.value.message
        assert provider.state == "crashed"

        answer = await ask(provider, QUESTION, max_tokens=6)
        assert answer.text.strip()
        assert provider.child_pid not in (None, victim)
        assert provider.state == "ready"

        # A native crash while idle: the next request quietly gets a new child.
        second = provider.child_pid
        assert second is not None
        os.kill(second, signal.SIGSEGV)
        await asyncio.sleep(0.5)
        assert (await ask(provider, QUESTION, max_tokens=4)).text
        assert provider.child_pid not in (None, second)
    finally:
        await provider.aclose()


async def test_closing_the_provider_mid_answer_lets_the_child_exit_promptly(anyio_backend: str):
    provider = EmbeddedProvider(n_ctx=1024)
    first_delta = asyncio.Event()

    async def consume() -> None:
        async for item in provider.stream_chat("", STORY, ChatOptions(max_tokens=1000)):
            if isinstance(item, TextDelta):
                first_delta.set()

    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(first_delta.wait(), timeout=120)
        started = time.monotonic()
        await provider.aclose()
        # It left on its own, before the grace period after which it would be killed.
        assert time.monotonic() - started < CHILD_EXIT_GRACE_S - 1
        with pytest.raises(ServerError, match="shut down"):
            await task
        assert provider.state == "stopped"
    finally:
        task.cancel()
        await provider.aclose()


async def test_without_a_pin_the_model_loads_at_its_training_length_and_reports_progress(
    anyio_backend: str,
):
    seen: list[float] = []
    provider = EmbeddedProvider(on_load_progress=seen.append)
    try:
        assert provider.state == "stopped"
        started = time.monotonic()
        report = await provider.report(MODEL_ID)
        assert time.monotonic() - started < 60
        assert report.served == report.model_max == 8192
        assert provider.state == "ready"
        assert seen and seen == sorted(seen) and seen[-1] == 1.0
        # A lowered pin reloads the model with that context at the next use.
        assert provider.set_pin(1024)
        assert (await provider.report(MODEL_ID)).served == 1024
    finally:
        await provider.aclose()
    assert provider.state == "stopped"


async def test_a_missing_model_file_is_model_not_found_naming_the_path(
    anyio_backend: str, tmp_path: Path
):
    missing = tmp_path / "nowhere" / "model.gguf"
    provider = EmbeddedProvider(model_path=str(missing))
    with pytest.raises(ModelNotFound, match=str(missing)):
        await provider.list_models()
    with pytest.raises(ModelNotFound, match=str(missing)):
        await ask(provider, QUESTION)
    assert provider.segment_tokenizer("") is None
    assert provider.child_pid is None  # nothing was started for it
    await provider.aclose()


async def test_a_file_that_is_not_a_gguf_model_is_model_not_found_naming_the_path(
    anyio_backend: str, tmp_path: Path
):
    bogus = tmp_path / "notes.gguf"
    bogus.write_bytes(b"this is not a model\n" * 100)
    provider = EmbeddedProvider(model_path=str(bogus))
    try:
        with pytest.raises(ModelNotFound, match=str(bogus)):
            await provider.report(str(bogus))
        assert provider.state == "stopped"
        assert provider.segment_tokenizer("") is None
    finally:
        await provider.aclose()


async def test_the_model_is_known_by_its_name_or_path_and_no_other(embedded: EmbeddedProvider):
    path = default_model_path()
    assert path is not None
    for name in (MODEL_ID, Path(path).name, path):
        assert (await embedded.report(name)).model == MODEL_ID
    with pytest.raises(ModelNotFound, match="llama3:8b"):
        async for _ in embedded.stream_chat("llama3:8b", QUESTION, ChatOptions()):
            pass
