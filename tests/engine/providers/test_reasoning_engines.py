"""A thinking model on each engine's double: the reasoning reaches Brim apart from the
answer, the level is sent as the engine takes it, a model that cannot think is never asked
to (and the engine's refusal reads as a sentence), no finished turn's reasoning goes back,
and Ollama's cache figure shows where the server reports it."""

from __future__ import annotations

import pytest

from engine.messages import ToolCall, assistant, tool_result, user
from engine.providers.base import ChatOptions, ReasoningDelta, TextDelta
from engine.providers.errors import ThinkingUnsupported
from engine.providers.llamacpp import LlamaCppProvider
from engine.providers.ollama import OllamaProvider
from engine.providers.sglang import SglangProvider
from engine.providers.vllm import VllmProvider
from tests.engine.providers.conftest import Answer, chat
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeSglang,
    FakeVllm,
    OllamaModel,
)
from tests.helpers.smollm2_vocab import count_text

pytestmark = pytest.mark.anyio
QWEN = "qwen3:8b"
LLAMA = "llama3.1:8b"
THOUGHT = "The user asks about the sky. Rayleigh scattering explains it."
ANSWER = "Blue light scatters most."
CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')


def _reasoning(answer: Answer) -> str:
    return "".join(i.text for i in answer.items if isinstance(i, ReasoningDelta))


def _ollama(version: str = "0.33.0") -> FakeOllama:
    return FakeOllama(
        [
            OllamaModel(QWEN, capabilities=("completion", "tools", "thinking")),
            OllamaModel(LLAMA),
        ],
        version=version,
    )


async def test_ollama_streams_a_thinking_models_reasoning_apart_from_its_answer(anyio_backend):
    with _ollama() as fake:
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            answer = await chat(provider, QWEN)
        finally:
            await provider.aclose()
    assert _reasoning(answer) == THOUGHT
    assert answer.text == ANSWER
    kinds = [type(i) for i in answer.items if isinstance(i, ReasoningDelta | TextDelta)]
    assert kinds.index(TextDelta) > kinds.index(ReasoningDelta)  # thinking first, live
    # Ollama counts every token it generated, thinking included.
    assert answer.done.usage.completion_tokens == count_text(THOUGHT) + count_text(ANSWER)
    assert "think" not in fake.chat_requests[0].body  # None: left to Ollama


async def test_ollama_reasoning_off_is_sent_and_the_model_answers_without_it(anyio_backend):
    with _ollama() as fake:
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            off = await chat(provider, QWEN, options=ChatOptions(reasoning="off"))
            high = await chat(provider, QWEN, options=ChatOptions(reasoning="high"))
        finally:
            await provider.aclose()
    assert [r.body.get("think") for r in fake.chat_requests] == [False, "high"]
    assert (_reasoning(off), off.text) == ("", ANSWER)
    assert _reasoning(high) == THOUGHT


async def test_ollama_never_asks_a_model_that_cannot_think_once_it_knows(anyio_backend):
    with _ollama() as fake:
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            report = await provider.report(LLAMA)
            answer = await chat(provider, LLAMA, options=ChatOptions(reasoning="on"))
            off = await chat(provider, LLAMA, options=ChatOptions(reasoning="off"))
            thinker = await provider.report(QWEN)
        finally:
            await provider.aclose()
    assert (report.thinks, thinker.thinks) == (False, True)
    assert answer.text and off.text
    assert "think" not in fake.chat_requests[0].body
    assert fake.chat_requests[1].body["think"] is False  # harmless to any model


async def test_ollamas_refusal_to_think_is_its_own_error_in_a_plain_sentence(anyio_backend):
    with _ollama() as fake:
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            with pytest.raises(ThinkingUnsupported) as caught:
                await chat(provider, LLAMA, options=ChatOptions(reasoning="on"))  # no report
        finally:
            await provider.aclose()
    assert caught.value.kind == "thinking_unsupported"
    assert not caught.value.retryable
    assert "cannot think" in caught.value.message
    assert "reasoning to off" in caught.value.message
    assert fake.loads == []  # refused before any load


async def test_ollama_sends_back_only_the_running_tool_turns_thinking(anyio_backend):
    history = [
        user("old question"),
        assistant("old answer", reasoning="old thought"),
        user("read a.txt"),
        assistant("", (CALL,), reasoning="I should read the file."),
        tool_result(CALL, "contents"),
    ]
    with _ollama() as fake:
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            await chat(provider, QWEN, history)
        finally:
            await provider.aclose()
    sent = fake.chat_requests[0].body["messages"]
    assert [m.get("thinking") for m in sent] == [None, None, None, "I should read the file.", None]
    assert "old thought" not in str(sent)


@pytest.mark.parametrize(("version", "reported"), [("0.33.3", True), ("0.33.2", False)])
async def test_ollamas_cache_figure_is_read_where_the_server_reports_it(
    anyio_backend, version, reported
):
    first = [user("What is the capital of France? Answer in one word.")]
    with _ollama(version) as fake:
        fake.script_reply("Paris.")
        fake.script_reply("Lyon.")
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            await provider.report(LLAMA)
            one = await chat(provider, LLAMA, first)
            two = await chat(
                provider, LLAMA, [*first, assistant("Paris."), user("And the second city?")]
            )
        finally:
            await provider.aclose()
    usage = two.done.usage
    if reported:
        assert one.done.usage.cached_tokens == 0  # a fresh load reuses nothing
        assert usage.prompt_tokens is not None
        assert 0 < usage.cached_tokens < usage.prompt_tokens
    else:
        assert usage.cached_tokens is None  # "not reported"


@pytest.mark.parametrize(
    ("fake_type", "provider_type", "key"),
    [
        (FakeLlamaServer, LlamaCppProvider, "reasoning_content"),
        (FakeVllm, VllmProvider, "reasoning"),
        (FakeSglang, SglangProvider, "reasoning_content"),
    ],
)
async def test_each_server_streams_reasoning_apart_under_its_own_name(
    anyio_backend, fake_type, provider_type, key
):
    with fake_type() as fake:
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        provider = provider_type(fake.url, timeout=10.0)
        try:
            answer = await chat(provider, fake.model)
            fake.reasoning_parser = False  # the server leaves <think> in the content
            split = await chat(provider, fake.model)
        finally:
            await provider.aclose()
    assert fake.reasoning_key == key
    for seen in (answer, split):
        assert (_reasoning(seen), seen.text) == (THOUGHT, ANSWER)
        assert "<think>" not in seen.text


async def test_servers_are_sent_the_level_as_their_templates_take_it(anyio_backend):
    with FakeLlamaServer() as llama, FakeVllm() as vllm:
        llama.script_reply(ANSWER, reasoning=THOUGHT)
        for fake, provider_type in ((llama, LlamaCppProvider), (vllm, VllmProvider)):
            provider = provider_type(fake.url, timeout=10.0)
            try:
                answer = await chat(provider, fake.model, options=ChatOptions(reasoning="off"))
                await chat(provider, fake.model, options=ChatOptions(reasoning="low"))
            finally:
                await provider.aclose()
            assert _reasoning(answer) == ""
    assert [r.body["chat_template_kwargs"] for r in llama.chat_requests] == [
        {"enable_thinking": False},
        {"enable_thinking": True, "reasoning_effort": "low"},
    ]
    assert "reasoning_effort" not in llama.chat_requests[1].body
    assert vllm.chat_requests[1].body["reasoning_effort"] == "low"
    assert vllm.chat_requests[1].body["chat_template_kwargs"] == {"enable_thinking": True}


@pytest.mark.parametrize("preserves", [True, False])
async def test_llama_server_gets_the_tool_turns_reasoning_only_where_its_template_renders_it(
    anyio_backend, preserves
):
    history = [
        user("old"),
        assistant("old answer", reasoning="old thought"),
        user("read a.txt"),
        assistant("", (CALL,), reasoning="I should read the file."),
        tool_result(CALL, "contents"),
    ]
    caps = {"supports_tools": True, "supports_preserve_reasoning": preserves}
    with FakeLlamaServer(template_caps=caps) as fake:
        provider = LlamaCppProvider(fake.url, timeout=10.0)
        try:
            report = await provider.report(fake.model)
            await chat(provider, fake.model, history)
        finally:
            await provider.aclose()
    assert report.preserves_reasoning is preserves
    sent = fake.chat_requests[0].body["messages"]
    expected = "I should read the file." if preserves else None
    assert [m.get("reasoning_content") for m in sent] == [None, None, None, expected, None]
    assert "old thought" not in str(sent)


async def test_vllm_never_gets_reasoning_back(anyio_backend):
    history = [user("read a.txt"), assistant("", (CALL,), reasoning="plan"), tool_result(CALL, "x")]
    with FakeVllm() as fake:
        provider = VllmProvider(fake.url, timeout=10.0)
        try:
            await chat(provider, fake.model, history)
        finally:
            await provider.aclose()
    assert "plan" not in str(fake.chat_requests[0].body["messages"])


def test_reasoning_tokens_are_read_where_the_usage_counts_them_apart():
    provider = VllmProvider("http://127.0.0.1:9")
    usage = provider.usage_from(
        {
            "prompt_tokens": 10,
            "completion_tokens": 30,
            "completion_tokens_details": {"reasoning_tokens": 22},
        },
        None,
    )
    assert (usage.completion_tokens, usage.reasoning_tokens) == (30, 22)
    assert (
        provider.usage_from({"prompt_tokens": 1, "completion_tokens": 2}, None).reasoning_tokens
        is None
    )


async def test_an_ollama_cap_spent_thinking_ends_with_length_and_no_answer(anyio_backend):
    with _ollama() as fake:
        fake.script_reply(ANSWER, reasoning=THOUGHT)
        provider = OllamaProvider(fake.url, timeout=10.0)
        try:
            answer = await chat(provider, QWEN, options=ChatOptions(max_tokens=4))
        finally:
            await provider.aclose()
    assert answer.done.finish_reason == "length"
    assert answer.text == ""
    assert THOUGHT.startswith(_reasoning(answer)) and _reasoning(answer)
    assert answer.done.usage.completion_tokens == 4
