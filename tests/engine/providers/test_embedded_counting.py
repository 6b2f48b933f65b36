"""Exact counts: for the embedded model, Brim's count of a chat request equals the prompt
tokens the engine reports, whole and as the sum of its per-message segments."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from engine.messages import Message, ToolCall, assistant, notice, system, tool_result, user
from engine.providers.base import ChatOptions, StreamDone, ToolCallsReady
from engine.providers.chat_template import template_messages
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.tokens import counter_for

pytestmark = pytest.mark.skipif(
    default_model_path() is None, reason="the default model is not installed"
)

CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "notes.txt"}')

CONVERSATIONS: dict[str, list[Message]] = {
    "system and user": [system("You are terse."), user("Why is the sky blue?")],
    "user only (the template adds its default system prompt)": [user("Hello there!")],
    "multi-turn": [
        system("You are a helpful assistant."),
        user("What is 2 + 2?"),
        assistant("4"),
        user("And times three?"),
        assistant("12."),
        user("Thanks. Now say it in words."),
    ],
    "multi-turn without a system message": [
        user("Name a colour."),
        assistant("Blue."),
        user("Another one?"),
    ],
    "unicode": [
        system("Réponds en français, s'il te plaît. 🙂"),
        user("Grüße aus Köln! 東京タワーは何メートル？ Ωμέγα — naïve café ☕\n\n  indented\ttab"),
    ],
    "a tool round-trip": [
        system("You can read files."),
        user("What is in notes.txt?"),
        assistant("", tool_calls=(CALL,)),
        tool_result(CALL, "buy milk\nfix the bike"),
    ],
    "text that looks like the template's own markers": [
        system("Be careful."),
        user("Literally type <|im_end|> and <|im_start|>assistant for me."),
    ],
}


@pytest.fixture(scope="module")
def tokenizer() -> GgufTokenizer:
    path = default_model_path()
    assert path is not None
    return GgufTokenizer(path)


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedProvider]:
    provider = EmbeddedProvider(n_ctx=2048)
    yield provider
    asyncio.run(provider.aclose())


def segmented(tokenizer: GgufTokenizer, messages: list[Message]) -> int:
    first_role = messages[0].role if messages else None
    overhead = tokenizer.request_overhead(False, first_role)
    return overhead + sum(tokenizer.count_message(m) for m in messages)


async def reported_prompt_tokens(
    provider: EmbeddedProvider, messages: list[Message], tools: list[dict[str, Any]] | None = None
) -> int:
    done = None
    options = ChatOptions(max_tokens=1, tools=tools or [])
    async for item in provider.stream_chat("", messages, options):
        assert not isinstance(item, ToolCallsReady)
        if isinstance(item, StreamDone):
            done = item
    assert done is not None and done.usage.prompt_tokens is not None
    return done.usage.prompt_tokens


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("name", list(CONVERSATIONS))
async def test_brims_count_equals_the_prompt_tokens_the_engine_reports(
    name: str, embedded: EmbeddedProvider, tokenizer: GgufTokenizer, anyio_backend: str
):
    messages = CONVERSATIONS[name]
    reported = await reported_prompt_tokens(embedded, messages)
    assert await embedded.count_prompt("", messages, []) == reported
    assert tokenizer.count_request(messages) == reported
    assert segmented(tokenizer, messages) == reported


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_token_counter_brim_uses_is_exact_for_an_agent_conversation(
    embedded: EmbeddedProvider, anyio_backend: str
):
    counter = counter_for(embedded, "")
    assert counter.estimate_is_exact
    history = list(CONVERSATIONS["multi-turn"])
    for _ in range(2):  # before and after it has seen a report
        reported = await reported_prompt_tokens(embedded, history)
        assert counter.count_request(history, []) == reported
        counter.calibrate(history, [], reported)
        history += [assistant("Twelve."), user("Good.")]


@pytest.mark.slow
@pytest.mark.anyio
async def test_tools_offered_to_a_model_whose_template_cannot_render_them_are_left_out(
    embedded: EmbeddedProvider, anyio_backend: str
):
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
    messages = CONVERSATIONS["system and user"]
    reported = await reported_prompt_tokens(embedded, messages, tools)
    assert reported == await embedded.count_prompt("", messages, tools)
    assert reported == await embedded.count_prompt("", messages, [])


def test_each_message_counts_the_same_wherever_it_stands(tokenizer: GgufTokenizer):
    question = user("Where does the sun rise?")
    alone = segmented(tokenizer, [question])
    later = segmented(tokenizer, [system("Hi."), user("Hello"), assistant("Hey"), question])
    assert tokenizer.count_request([question]) == alone
    assert (
        tokenizer.count_request([system("Hi."), user("Hello"), assistant("Hey"), question]) == later
    )


def test_the_default_system_prompt_is_framing_only_when_the_request_lacks_a_system_message(
    tokenizer: GgufTokenizer,
):
    default_prompt = tokenizer.count_text("You are a helpful AI assistant named SmolLM")
    with_system = tokenizer.request_overhead(False, "system")
    without = tokenizer.request_overhead(False, "user")
    assert with_system == tokenizer.request_overhead(False)  # Brim's requests start with one
    assert without - with_system > default_prompt


def test_tools_cost_nothing_when_the_template_cannot_render_them(tokenizer: GgufTokenizer):
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {}}}]
    assert not tokenizer.template.supports_tools
    assert tokenizer.count_tools(tools) == 0
    messages = CONVERSATIONS["system and user"]
    assert tokenizer.count_request(messages, tools) == tokenizer.count_request(messages)


def test_notices_are_never_counted(tokenizer: GgufTokenizer):
    assert tokenizer.count_message(notice("compacted 12 messages")) == 0
    messages = CONVERSATIONS["system and user"]
    with_notice = [messages[0], notice("hello"), messages[1]]
    assert tokenizer.count_request(with_notice) == tokenizer.count_request(messages)


def prompt_of_llama_cpp_python_own_chat_path(messages: list[Message]) -> list[int]:
    """The prompt tokens llama-cpp-python's own `create_chat_completion` would evaluate, caught
    just before evaluation (so nothing decodes here): an oracle independent of Brim's code."""
    from llama_cpp import Llama

    path = default_model_path()
    assert path is not None
    llm = Llama(model_path=path, vocab_only=True, verbose=False)
    caught: list[list[int]] = []

    def create_completion(prompt: list[int], **_: object) -> dict[str, object]:
        caught.append(list(prompt))
        choice = {"text": "", "index": 0, "logprobs": None, "finish_reason": "stop"}
        usage = {"prompt_tokens": len(prompt), "completion_tokens": 0, "total_tokens": 0}
        return {
            "id": "x",
            "object": "text_completion",
            "created": 0,
            "model": path,
            "choices": [choice],
            "usage": usage,
        }

    llm.create_completion = create_completion  # type: ignore[method-assign]
    llm.create_chat_completion(messages=template_messages(messages), max_tokens=1)
    return caught[0]


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_brims_count_matches_llama_cpp_pythons_own_chat_completion_path(
    name: str, tokenizer: GgufTokenizer
):
    messages = CONVERSATIONS[name]
    assert tokenizer.count_request(messages) == len(
        prompt_of_llama_cpp_python_own_chat_path(messages)
    )
