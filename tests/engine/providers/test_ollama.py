"""Ollama through the official client: the pin on every request, the facts in the report,
silent truncation visible in the usage, and Ollama's own error shapes."""

from __future__ import annotations

import json

import pytest

from engine.messages import system, user
from engine.providers.base import ChatOptions
from engine.providers.errors import ContextOverflow, ProtocolError, ServerError
from engine.providers.ollama import OllamaProvider
from engine.providers.ollama_answers import modelfile_num_ctx, training_length
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeOllama, OllamaModel
from tests.helpers.smollm2_vocab import count_chat, count_text

pytestmark = pytest.mark.anyio
MODEL = "llama3.1:8b"


@pytest.fixture
async def ollama(anyio_backend):
    with FakeOllama([OllamaModel(MODEL, context_length=131072)], default_num_ctx=4096) as fake:
        provider = OllamaProvider(fake.url, timeout=10.0)
        yield fake, provider
        await provider.aclose()


async def test_the_official_client_is_what_talks_to_ollama(ollama):
    fake, provider = ollama

    await chat(provider, MODEL)

    assert fake.chat_requests[0].headers["user-agent"].startswith("ollama-python/")


async def test_a_pinned_num_ctx_goes_out_on_every_request_and_never_reloads(anyio_backend):
    with FakeOllama([OllamaModel(MODEL)], default_num_ctx=4096) as fake:
        provider = OllamaProvider(fake.url, num_ctx=8192)
        try:
            for turn in range(3):
                await chat(provider, MODEL, [user(f"turn {turn}")])
        finally:
            await provider.aclose()

    assert [r.body["options"]["num_ctx"] for r in fake.chat_requests] == [8192, 8192, 8192]
    assert fake.loads == [(MODEL, 8192)]
    assert fake.reloads == 0


async def test_without_a_pin_no_num_ctx_is_sent_and_the_server_default_applies(ollama):
    fake, provider = ollama

    await chat(provider, MODEL)

    assert "num_ctx" not in (fake.chat_requests[0].body.get("options") or {})
    assert fake.chat_requests[0].window == 4096


async def test_changing_the_pin_reloads_the_model_as_ollama_does(anyio_backend):
    with FakeOllama([OllamaModel(MODEL)]) as fake:
        for pin in (8192, 16384):
            provider = OllamaProvider(fake.url, num_ctx=pin)
            try:
                await chat(provider, MODEL)
            finally:
                await provider.aclose()

    assert fake.reloads == 1


async def test_the_report_before_a_load_knows_the_training_length_but_not_the_window(ollama):
    _, provider = ollama

    report = await provider.report(MODEL)

    assert report.loaded is False
    assert report.served is None
    assert report.model_max == 131072
    assert report.modelfile_num_ctx is None


async def test_the_report_reads_the_loaded_window_from_api_ps(ollama):
    fake, provider = ollama
    fake.load(MODEL, 32768)

    report = await provider.report("llama3.1:8b")

    assert report.loaded is True
    assert report.served == 32768


async def test_a_model_named_without_a_tag_matches_latest(anyio_backend):
    with FakeOllama([OllamaModel("qwen3:latest", arch="qwen3", context_length=40960)]) as fake:
        fake.load("qwen3", 8192)
        provider = OllamaProvider(fake.url)
        try:
            report = await provider.report("qwen3")
        finally:
            await provider.aclose()

    assert (report.served, report.model_max) == (8192, 40960)


async def test_an_older_server_without_context_length_in_ps_reports_unknown_not_zero(
    anyio_backend,
):
    with FakeOllama([OllamaModel(MODEL)], ps_context_length=False) as fake:
        fake.load(MODEL, 8192)
        provider = OllamaProvider(fake.url)
        try:
            report = await provider.report(MODEL)
        finally:
            await provider.aclose()

    assert report.loaded is True
    assert report.served is None


async def test_the_modelfile_pin_is_reported(anyio_backend):
    with FakeOllama([OllamaModel(MODEL, modelfile_num_ctx=8192)]) as fake:
        provider = OllamaProvider(fake.url)
        try:
            report = await provider.report(MODEL)
            await chat(provider, MODEL)
        finally:
            await provider.aclose()

    assert report.modelfile_num_ctx == 8192
    assert fake.chat_requests[0].window == 8192  # and Ollama honours it


async def test_usage_carries_counts_and_durations_but_no_cache_figure(ollama):
    fake, provider = ollama
    fake.script_reply("Rayleigh scattering.")
    messages = [system("You are terse."), user("Why is the sky blue?")]

    usage = (await chat(provider, MODEL, messages)).done.usage

    assert usage.prompt_tokens == count_chat(fake.chat_requests[0].body["messages"])
    assert usage.completion_tokens == count_text("Rayleigh scattering.")
    assert usage.cached_tokens is None  # Ollama does not report it: unknown, not 0
    assert usage.prompt_eval_s is not None and usage.prompt_eval_s > 0
    assert usage.eval_s is not None and usage.eval_s > 0


def _long_history() -> list:
    history = [system("You are terse.")]
    history += [user(" ".join(["filler"] * 500)) for _ in range(20)]
    history.append(user("What was my first question?"))
    return history


@pytest.mark.parametrize(("version", "strict"), [("0.5.7", True), ("0.24.0", False)])
async def test_an_over_long_prompt_is_cut_silently_where_strictness_is_not_possible_or_off(
    anyio_backend, version, strict
):
    """Before 0.12.6 Ollama cannot be told not to cut; after, only a provider built without
    strictness lets it. Then only the usage shows the cut."""
    with FakeOllama([OllamaModel(MODEL)], version=version) as fake:
        provider = OllamaProvider(fake.url, num_ctx=2048, strict=strict)
        try:
            await provider.report(MODEL)
            answer = await chat(provider, MODEL, _long_history())
        finally:
            await provider.aclose()

    request = fake.chat_requests[0]
    assert request.prompt_tokens > 2048
    assert request.truncated
    assert answer.done.usage.prompt_tokens < request.prompt_tokens
    assert answer.done.usage.prompt_tokens <= 2048


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.12.6", "the input length exceeds the context length"),
        ("0.24.0", "the input length exceeds the context length"),
        ("0.30.1", "exceeds the available context size (2048 tokens)"),
        ("0.33.0", "exceeds the available context size (2048 tokens)"),
    ],
)
async def test_a_strict_request_makes_an_over_long_prompt_an_overflow_instead_of_a_cut(
    anyio_backend, version, words
):
    with FakeOllama([OllamaModel(MODEL)], version=version) as fake:
        provider = OllamaProvider(fake.url, num_ctx=2048)
        try:
            await provider.report(MODEL)
            with pytest.raises(ContextOverflow) as caught:
                await chat(provider, MODEL, _long_history())
        finally:
            await provider.aclose()

    (request,) = fake.chat_requests
    assert (request.body["truncate"], request.body["shift"]) == (False, False)
    assert "truncate" not in request.body["options"]  # top-level fields, not options
    assert not request.truncated
    assert caught.value.status == 400
    assert words in str(caught.value)
    if version >= "0.30":  # llama-server's own body, passed on: its figures are read
        assert (caught.value.prompt_tokens, caught.value.window) == (request.prompt_tokens, 2048)


async def test_an_ollama_before_0_12_6_is_sent_no_fields_it_does_not_know(anyio_backend):
    with FakeOllama([OllamaModel(MODEL)], version="0.5.7") as fake:
        provider = OllamaProvider(fake.url)
        try:
            report = await provider.report(MODEL)
            await chat(provider, MODEL)
        finally:
            await provider.aclose()

    assert "truncate" not in fake.chat_requests[0].body
    assert "shift" not in fake.chat_requests[0].body
    assert any("0.12.6" in w and "silently" in w for w in report.warnings)


async def test_every_kind_of_request_sends_the_same_load_options_so_none_reloads(anyio_backend):
    """The agent's, the summarizer's and memory's requests differ in what they sample
    with, never in what the model is loaded with (num_ctx; shift, a launch setting from
    0.30.0): one load for all of them."""
    with FakeOllama([OllamaModel(MODEL)], version="0.33.0") as fake:
        provider = OllamaProvider(fake.url, num_ctx=8192)
        try:
            for options in (
                ChatOptions(max_tokens=1024, temperature=0.7, tools=[]),  # the agent
                ChatOptions(max_tokens=600, temperature=0.2, stop=["</summary>"]),  # summary
                ChatOptions(max_tokens=768, temperature=0.1),  # memory
            ):
                await chat(provider, MODEL, [user("hello")], options)
        finally:
            await provider.aclose()

    bodies = [r.body for r in fake.chat_requests]
    assert {(b["options"]["num_ctx"], b["truncate"], b["shift"]) for b in bodies} == {
        (8192, False, False)
    }
    assert fake.loads == [(MODEL, 8192)]
    assert fake.reloads == 0


async def test_the_three_overflow_messages_of_ollama_are_overflows(ollama):
    fake, provider = ollama
    texts = [
        "the input length exceeds the context length",
        "the prompt is longer than the context length currently available to the model; "
        "shorten the prompt, adjust the context length in settings, or use a model with a "
        "longer context length",
        '{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context '
        'size (4096 tokens), try increasing it","type":"exceed_context_size_error",'
        '"n_prompt_tokens":5000,"n_ctx":4096}}',
    ]
    caught = []
    for text in texts:
        fake.override("/api/chat", 400, json.dumps({"error": text}), "application/json")
        with pytest.raises(ContextOverflow) as error:
            await chat(provider, MODEL)
        caught.append(error.value)

    assert [e.status for e in caught] == [400, 400, 400]
    assert (caught[2].prompt_tokens, caught[2].window) == (5000, 4096)


async def test_an_error_line_mid_stream_is_a_server_error(ollama):
    fake, provider = ollama
    fake.script_reply(
        "a b c d e", fail="error_event", fail_after=2, error_message="llama runner exited"
    )

    with pytest.raises(ServerError) as caught:
        await chat(provider, MODEL)

    assert "llama runner exited" in str(caught.value)


async def test_an_error_line_that_says_the_prompt_is_too_long_is_an_overflow(ollama):
    fake, provider = ollama
    fake.script_reply(
        "a b c", fail="error_event", error_message="the input length exceeds the context length"
    )

    with pytest.raises(ContextOverflow):
        await chat(provider, MODEL)


async def test_a_400_overflow_is_a_context_overflow(ollama):
    fake, provider = ollama
    fake.script_reply(fail="overflow")

    with pytest.raises(ContextOverflow) as caught:
        await chat(provider, MODEL)

    assert caught.value.status == 400


async def test_an_api_show_answer_that_is_not_json_is_a_protocol_error(ollama):
    fake, provider = ollama
    fake.override("/api/show", 200, "<html>captive portal</html>", "text/html")

    with pytest.raises(ProtocolError):
        await provider.report(MODEL)


def test_the_modelfile_num_ctx_is_read_from_the_parameters_text():
    assert modelfile_num_ctx('num_ctx                        8192\nstop  "<|eot_id|>"') == 8192
    assert modelfile_num_ctx('stop  "<|eot_id|>"') is None
    assert modelfile_num_ctx(None) is None


def test_the_training_length_comes_from_the_architecture_key():
    info = {"general.architecture": "gemma3", "gemma3.context_length": 131072}
    assert training_length(info) == 131072
    assert training_length({"general.architecture": "llama"}) is None
    assert training_length(None) is None
