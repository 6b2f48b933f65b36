"""What every HTTP engine's provider must do the same way, each against its own fake."""

from __future__ import annotations

import asyncio

import pytest

from engine.messages import ToolCall, assistant, system, tool_result, user
from engine.providers.base import ChatOptions, TextDelta
from engine.providers.errors import (
    EngineUnreachable,
    ModelNotFound,
    ProtocolError,
    ServerError,
)
from engine.providers.registry import make_provider
from tests.engine.providers.conftest import KINDS, MODELS, Engine, chat
from tests.helpers.fake_engines import FakeToolCall

pytestmark = pytest.mark.anyio

LONG_ANSWER = " ".join(f"word{i}" for i in range(300))


async def test_a_streamed_answer_arrives_in_pieces_and_ends_with_usage(engine, provider):
    engine.fake.script_reply("The sky scatters blue light more.")

    answer = await chat(provider, engine.model)

    assert answer.text == "The sky scatters blue light more."
    assert sum(isinstance(i, TextDelta) for i in answer.items) == 6
    assert answer.done.finish_reason == "stop"
    # the engine's own count of the answer (its model's tokens, not the pieces it streamed)
    served = engine.fake.vocab.count_text("The sky scatters blue light more.")
    assert answer.done.usage.completion_tokens == served
    assert answer.done.usage.prompt_tokens == engine.fake.chat_requests[-1].prompt_tokens


async def test_tool_calls_arrive_whole_with_json_arguments_and_ids(engine, provider):
    engine.fake.script_reply(
        "Let me look.",
        tool_calls=[
            FakeToolCall("read_file", {"path": "notes/today.md", "limit": 40}),
            FakeToolCall("list_dir", {"path": "."}),
        ],
    )

    answer = await chat(provider, engine.model)

    calls = answer.tool_calls
    assert [c.name for c in calls] == ["read_file", "list_dir"]
    assert calls[0].parsed_arguments() == {"path": "notes/today.md", "limit": 40}
    assert calls[1].parsed_arguments() == {"path": "."}
    assert all(c.id for c in calls) and calls[0].id != calls[1].id
    assert answer.done.finish_reason == "tool_calls"


async def test_a_tool_round_trip_reaches_the_engine_in_its_own_shape(engine, provider):
    call = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')
    history = [
        system("You are terse."),
        user("What is in a.txt?"),
        assistant("", tool_calls=(call,)),
        tool_result(call, "hello from a.txt"),
    ]

    await chat(provider, engine.model, history)

    sent = engine.fake.chat_requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    arguments = sent[2]["tool_calls"][0]["function"]["arguments"]
    if engine.kind == "ollama":
        assert arguments == {"path": "a.txt"}  # Ollama wants an object
        assert sent[3]["tool_name"] == "read_file"
    else:
        assert arguments == '{"path": "a.txt"}'  # OpenAI-compatible: the JSON text
        assert sent[3]["tool_call_id"] == "call_1"


async def test_tool_schemas_are_sent_to_the_engine(engine, provider):
    schema = {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "file path"}},
                "required": ["path"],
            },
        },
    }

    await chat(provider, engine.model, options=ChatOptions(tools=[schema]))

    sent = engine.fake.chat_requests[-1].body["tools"]
    assert sent[0]["function"]["name"] == "read_file"
    assert sent[0]["function"]["parameters"]["required"] == ["path"]


async def test_max_tokens_cuts_the_answer_with_finish_reason_length(engine, provider):
    engine.fake.script_reply(LONG_ANSWER)

    answer = await chat(provider, engine.model, options=ChatOptions(max_tokens=5))

    # the first five of the served model's tokens (a digit is one on SmolLM2)
    assert LONG_ANSWER.startswith(answer.text) and answer.text.startswith("word0")
    assert engine.fake.vocab.count_text(answer.text) == 5
    assert answer.done.finish_reason == "length"


async def test_notice_rows_are_never_sent_to_the_model(engine, provider):
    from engine.messages import notice

    await chat(provider, engine.model, [user("hi"), notice("auto-compacted"), user("again")])

    sent = engine.fake.chat_requests[-1].body["messages"]
    assert [m["content"] for m in sent] == ["hi", "again"]


async def test_cancelling_the_consumer_closes_the_stream_and_leaks_nothing(engine, provider):
    engine.fake.script_reply(LONG_ANSWER, token_delay=0.02)
    tasks_before = asyncio.all_tasks()
    three_pieces = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        async for item in provider.stream_chat(
            engine.model, [user("Count to three hundred.")], ChatOptions()
        ):
            if isinstance(item, TextDelta):
                received.append(item.text)
                if len(received) == 3:
                    three_pieces.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three_pieces.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await asyncio.to_thread(engine.fake.wait_for_disconnect, 5)
    assert len(received) < 300
    assert asyncio.all_tasks() - tasks_before == set()
    # The provider is still usable: the abandoned connection did not poison the pool.
    engine.fake.script_reply("Still here.")
    assert (await chat(provider, engine.model)).text == "Still here."


async def test_an_engine_that_is_not_running_is_unreachable_and_named(engine, closed_port_url):
    provider = make_provider(engine.kind, closed_port_url, connect_timeout=2.0)
    try:
        for attempt in (
            provider.list_models(),
            provider.report(engine.model),
            chat(provider, engine.model),
        ):
            with pytest.raises(EngineUnreachable) as caught:
                await attempt
            assert closed_port_url.removeprefix("http://") in str(caught.value)
    finally:
        await provider.aclose()


async def test_an_http_500_is_a_server_error(engine, provider):
    engine.fake.script_reply(fail="http500", error_message="CUDA error: out of memory")

    with pytest.raises(ServerError) as caught:
        await chat(provider, engine.model)

    assert caught.value.status == 500
    assert "out of memory" in str(caught.value)


async def test_an_error_inside_a_200_stream_is_a_server_error(engine, provider):
    engine.fake.script_reply(
        LONG_ANSWER, fail="error_event", fail_after=3, error_message="the runner died"
    )

    with pytest.raises(ServerError) as caught:
        await chat(provider, engine.model)

    assert "the runner died" in str(caught.value)


async def test_an_engine_that_dies_mid_stream_is_a_server_error(engine, provider):
    engine.fake.script_reply(LONG_ANSWER, fail="die", fail_after=4)

    with pytest.raises(ServerError) as caught:
        await chat(provider, engine.model)

    assert "closed the connection" in str(caught.value)


async def test_an_engine_that_hangs_mid_stream_times_out_as_a_server_error(engine):
    engine.fake.script_reply(LONG_ANSWER, fail="hang", fail_after=2)
    provider = engine.provider(timeout=0.5)
    try:
        with pytest.raises(ServerError) as caught:
            await chat(provider, engine.model)
    finally:
        await provider.aclose()

    assert "stopped answering" in str(caught.value)


async def test_a_malformed_stream_line_is_a_protocol_error(engine, provider):
    engine.fake.script_reply(LONG_ANSWER, fail="malformed", fail_after=2)

    with pytest.raises(ProtocolError):
        await chat(provider, engine.model)


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ("llamacpp", "sglang")])
async def test_an_unknown_model_is_model_not_found(kind, anyio_backend):
    """On a server with more than one model (a server with one is followed to it, and the
    user told: engine/providers/served_names.py; SGLang serves one model per process)."""
    from tests.engine.providers.conftest import FAKES
    from tests.helpers.fake_vllm import FakeVllm

    make = (lambda: FakeVllm(also_serves=("other/model",))) if kind == "vllm" else FAKES[kind]
    with make() as fake:
        provider = Engine(kind, fake, MODELS[kind]).provider()
        try:
            with pytest.raises(ModelNotFound) as on_report:
                await provider.report("no-such-model")
            with pytest.raises(ModelNotFound):
                await chat(provider, "no-such-model")
        finally:
            await provider.aclose()

    assert "no-such-model" in str(on_report.value)


async def test_list_models_names_what_the_engine_serves(engine, provider):
    models = await provider.list_models()

    assert engine.model in [m.id for m in models]


REPORT_PATHS = {
    "ollama": "/api/show",
    "llamacpp": "/props",
    "vllm": "/v1/models",
    "sglang": "/v1/models",
}


async def test_a_report_answered_with_a_web_page_is_a_protocol_error(engine, provider):
    engine.fake.override(REPORT_PATHS[engine.kind], 200, "<html>login</html>", "text/html")

    with pytest.raises(ProtocolError):
        await provider.report(engine.model)


async def test_a_chat_answered_with_something_other_than_a_stream_is_a_protocol_error(
    engine, provider
):
    path = "/api/chat" if engine.kind == "ollama" else "/v1/chat/completions"
    engine.fake.override(path, 200, "<html>login</html>", "text/html")

    with pytest.raises(ProtocolError):
        await chat(provider, engine.model)
