"""Issue 11 item 2: exact counts on every engine that can count, incrementally, and `/context`
saying per engine whether the count is exact or estimated, and why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.events import ContextReportEvent
from engine.messages import Message, ToolCall, assistant, system, tool_result, user
from engine.paths import BrimPaths
from engine.providers.embedded import default_model_path
from engine.providers.llamacpp import LlamaCppProvider
from engine.providers.ollama import OllamaProvider
from engine.providers.sglang import SglangProvider
from engine.providers.vllm import VllmProvider
from engine.session import ChatSession
from engine.tokens import TokenCounter, counter_for
from engine.tokens.calibration import heuristic_framing, message_text
from tests.helpers import fake_llama3
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeSglang,
    FakeVllm,
    OllamaModel,
)
from tests.helpers.smollm2_vocab import render_chat, tokenize

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file from the workspace",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
TABLE = "\n".join(f"{i},{i * 3.14159:.5f},{i * 2.71828:.5f},0x{i * 977:06x}" for i in range(80))
PROSE = "The committee reviewed the proposal and agreed that the plan was sound. " * 12


def _conversation(turns: int) -> list[Message]:
    msgs: list[Message] = [system("You are Brim, a careful assistant.")]
    for i in range(turns):
        call = ToolCall(id=f"call_{i}", name="read_file", arguments=f'{{"path": "f{i}.csv"}}')
        msgs += [
            user(f"Turn {i}: read f{i}.csv and sum it."),
            assistant("", (call,)),
            tool_result(call, TABLE if i % 2 else PROSE),
            assistant(f"The sum of turn {i} is {i * 1234.5}."),
        ]
    return msgs


def _to_wire(messages: list[Message]) -> list[dict]:
    from engine.messages import to_openai

    return [to_openai(m) for m in messages]


async def _prime_and_count(counter: TokenCounter, messages: list[Message], tools) -> int:
    await counter.prime(messages, tools)
    return counter.count_request(messages, tools)


def test_on_llama_server_each_new_message_is_counted_once_and_the_request_exactly():
    with FakeLlamaServer(n_ctx=32768) as fake:
        provider = LlamaCppProvider(fake.url)
        counter = counter_for(provider, "")

        async def go() -> list[tuple[int, int]]:
            out = []
            try:
                for turns in range(1, 7):
                    # A request ends with the user's turn (a final assistant message would
                    # be a prefill to continue, which llama-server renders open-ended).
                    messages = [*_conversation(turns), user("And the total?")]
                    before = len(fake.requests_to("/apply-template"))
                    counted = await _prime_and_count(counter, messages, TOOLS)
                    calls = len(fake.requests_to("/apply-template")) - before
                    engine = len(tokenize(render_chat(_to_wire(messages), TOOLS), add_special=True))
                    out.append((counted - engine, calls))
                    counter.calibrate(messages, TOOLS, engine)  # as each answer does
            finally:
                await provider.aclose()
            return out

        results = asyncio.run(go())

    assert counter.estimate_is_exact
    # Qwen's template writes the tools into the system message, so where the system text
    # meets the tools block the tokens are the request's, no message's: the first count is
    # off by that junction (a token or two), and the answers teach it.
    gaps = [gap for gap, _ in results]
    assert all(abs(gap) <= 2 for gap in gaps), gaps
    assert gaps[2:] == [0] * 4, gaps  # exact, prose and numbers alike
    # After the first request only the four new messages of each turn are sent to count.
    assert all(calls == 4 for _, calls in results[1:])


def test_on_vllm_the_loop_counter_equals_the_engines_own_count_of_the_request():
    model = "Qwen/Qwen2.5-7B-Instruct"
    with FakeVllm(model, max_model_len=32768) as fake:
        provider = VllmProvider(fake.url)
        counter = counter_for(provider, model)

        async def go() -> tuple[int, int | None, int]:
            try:
                messages = _conversation(4)
                counted = await _prime_and_count(counter, messages, TOOLS)
                engine = await provider.count_prompt(model, messages, TOOLS)
                for _ in range(2):  # two answers to requests of this shape
                    counter.calibrate(messages, TOOLS, engine)
                later = [*messages, user("And the total?")]
                return (
                    counted,
                    engine,
                    await _prime_and_count(counter, later, TOOLS)
                    - (await provider.count_prompt(model, later, TOOLS) or 0),
                )
            finally:
                await provider.aclose()

        counted, engine, later_gap = asyncio.run(go())

    # The tools join Qwen's system message: the junction is the request's own (a token or
    # two off before the first answer), then learned.
    assert counter.estimate_is_exact and engine is not None and abs(counted - engine) <= 2
    assert later_gap == 0


@pytest.mark.xfail(
    strict=True,
    reason="Brim's defect, shown by the bundled model's vocabulary: one o200k-to-engine scale "
    "is learned from every message, and SmolLM2 spends a token per digit where o200k groups "
    "three, so after numeric tool results a prose checkpoint is estimated about 1.6 times its "
    "count (262 for 166)",
)
def test_what_the_engine_has_not_counted_yet_is_estimated_close_to_its_count():
    """A checkpoint the ladder just wrote (prose) is estimated from the engine's own counts
    per character; a bare text being sized (a tool result of numbers) from a real BPE scaled
    to the engine, so a table is not taken at the prose ratio."""
    with FakeLlamaServer(n_ctx=32768) as fake:
        provider = LlamaCppProvider(fake.url)
        counter = counter_for(provider, "")
        checkpoint = assistant("## Goal\n" + PROSE)
        table = user(TABLE)

        async def go() -> tuple[int, int, int, int]:
            try:
                await counter.prime(_conversation(4), [])
                table_estimate = counter.count_text(TABLE)  # sizing a result loads o200k
                estimates = counter.count_message(checkpoint), table_estimate
                await counter.prime([checkpoint, table], [])
                return (*estimates, counter.count_message(checkpoint), counter.count_message(table))
            finally:
                await provider.aclose()

        checkpoint_estimate, table_estimate, checkpoint_exact, table_exact = asyncio.run(go())

    assert abs(checkpoint_estimate - checkpoint_exact) <= 0.1 * checkpoint_exact
    assert abs(table_estimate - table_exact) <= 0.1 * table_exact


def _describe(provider, model: str) -> str:
    return counter_for(provider, model).describe()


def test_context_says_llama_server_and_vllm_count_exactly_and_how():
    with FakeLlamaServer() as llama, FakeVllm() as vllm:
        assert _describe(LlamaCppProvider(llama.url), "").startswith(
            "exact: llama-server's /tokenize of each message as its /apply-template frames it"
        )
        assert _describe(VllmProvider(vllm.url), vllm.model).startswith("exact: vLLM's /tokenize")


def test_on_sglang_each_messages_text_is_counted_exactly_through_v1_tokenize():
    """SGLang's /v1/tokenize counts text with the model's tokenizer (the double's is cl100k
    under Llama 3.1's template, not o200k): each message's text is counted exactly, once,
    and the template's framing is learned from the prompt tokens the answers report."""
    messages = [*_conversation(3), user("And the total?")]
    with FakeSglang(context_length=32768) as fake:
        provider = SglangProvider(fake.url)
        counter = counter_for(provider, fake.model)

        async def go() -> None:
            try:
                await counter.prime(messages, TOOLS)
                await counter.prime(messages, TOOLS)  # nothing new: nothing asked
            finally:
                await provider.aclose()

        asyncio.run(go())
        asked = fake.requests_to("/v1/tokenize")
    texts = {m.content_hash: m for m in messages}
    assert len(asked) == 1 + len(texts) + 1  # the probe, each message once, the schemas
    assert all(r.body["add_special_tokens"] is False for r in asked)
    for message in messages:
        own = sum(len(fake_llama3.tokenize(p)) for p in message_text(message) if p)
        assert counter.count_message(message) == own + heuristic_framing(message)
    engine = fake_llama3.count_chat(_to_wire(messages), TOOLS)
    for _ in range(12):  # answers landing: the residual is learned
        counter.calibrate(messages, TOOLS, engine)
    assert abs(counter.count_request(messages, TOOLS) - engine) <= 0.01 * engine
    assert not counter.estimate_is_exact  # the framing is learned, not counted


def test_context_says_sglang_counts_exact_text_and_how(tmp_path: Path):
    events: list = []
    with FakeSglang(context_length=32768) as fake:
        fake.script_reply("ok")
        agent = default_agent().with_changes(
            name="chat", provider="sglang", base_url=fake.url, model=fake.model
        )

        async def go() -> None:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
            await session.start()
            await session.send("hello")
            await session.send("/context")
            await session.close()

        asyncio.run(go())
    (snapshot,) = [e for e in events if isinstance(e, ContextReportEvent) and e.snapshot]
    assert snapshot.report.counting == (
        "sglang: exact text: SGLang's /v1/tokenize of each message's text; the chat "
        "template's framing is learned from each answer's prompt tokens"
    )


def test_an_sglang_without_v1_tokenize_is_estimated_and_says_why():
    with FakeSglang(tokenize=False) as fake:
        provider = SglangProvider(fake.url)
        counter = counter_for(provider, fake.model)

        async def go() -> None:
            try:
                await counter.prime(_conversation(1), [])
            finally:
                await provider.aclose()

        asyncio.run(go())

    text = counter.describe()
    assert text.startswith("estimated (") and "SGLang's /v1/tokenize did not answer" in text


def test_context_says_an_ollama_on_another_machine_is_estimated_as_its_model_file_is_not_here():
    text = _describe(OllamaProvider("http://10.0.0.5:11434"), "qwen3:8b")
    assert text.startswith("estimated (")
    assert "Ollama runs on another machine (10.0.0.5)" in text


def test_a_llama_server_that_cannot_count_falls_back_to_an_estimate_and_says_so():
    with FakeLlamaServer() as fake:
        fake.route("POST", "/tokenize", lambda ex, req: ex.send_json(404, {"error": "no"}))
        provider = LlamaCppProvider(fake.url)
        counter = counter_for(provider, "")

        async def go() -> None:
            try:
                await counter.prime(_conversation(1), [])
            finally:
                await provider.aclose()

        asyncio.run(go())

    assert not counter.estimate_is_exact
    assert counter.describe().startswith("estimated (o200k tokens scaled")
    assert "/tokenize did not answer" in counter.describe()


@pytest.mark.skipif(
    not Path(default_model_path()).exists(), reason="the bundled GGUF is not installed"
)
def test_an_ollama_on_this_machine_is_counted_exactly_from_the_gguf_its_modelfile_names():
    from engine.providers.gguf_tokenizer import GgufTokenizer

    blob = str(default_model_path())
    with FakeOllama(models=[OllamaModel(name="smollm2:135m", blob=blob)]) as fake:
        provider = OllamaProvider(fake.url)

        async def go() -> None:
            try:
                await provider.report("smollm2:135m")
            finally:
                await provider.aclose()

        asyncio.run(go())
        counter = counter_for(provider, "smollm2:135m")

    assert counter.estimate_is_exact
    assert counter.describe() == (
        f"exact: the model's own GGUF vocabulary ({blob}), opened read-only"
    )
    reference = GgufTokenizer(blob)
    message = user(TABLE)
    assert counter.count_message(message) == reference.count_message(message)


def test_when_the_engine_stops_counting_the_estimate_still_learns_from_each_answer():
    with FakeLlamaServer() as fake:
        fake.route("POST", "/tokenize", lambda ex, req: ex.send_json(404, {"error": "no"}))
        provider = LlamaCppProvider(fake.url)
        counter = counter_for(provider, "")
        messages = _conversation(6)
        engine = len(tokenize(render_chat(_to_wire(messages), TOOLS), add_special=True))

        async def go() -> None:
            try:
                await counter.prime(messages, TOOLS)
            finally:
                await provider.aclose()

        asyncio.run(go())
        first = counter.count_request(messages, TOOLS)
        for _ in range(6):
            counter.calibrate(messages, TOOLS, engine)
        learned = counter.count_request(messages, TOOLS)

    assert abs(learned - engine) < abs(first - engine) or first == engine
    assert abs(learned - engine) <= 0.03 * engine
