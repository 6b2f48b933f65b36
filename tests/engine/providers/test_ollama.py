"""Ollama through the official client: the pin on every request, the facts in the report,
silent truncation visible in the usage, and Ollama's own error shapes."""

from __future__ import annotations

import pytest

from engine.messages import system, user
from engine.providers.base import ChatOptions
from engine.providers.errors import ContextOverflow, ProtocolError, ServerError
from engine.providers.ollama import OllamaProvider, modelfile_num_ctx, training_length
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeOllama, OllamaModel
from tests.helpers.fake_tokenizer import count_chat

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


async def test_a_pinned_num_ctx_goes_out_on_every_request_and_never_reloads(ollama):
    fake, provider = ollama

    for turn in range(3):
        await chat(provider, MODEL, [user(f"turn {turn}")], ChatOptions(num_ctx=8192))

    assert [r.body["options"]["num_ctx"] for r in fake.chat_requests] == [8192, 8192, 8192]
    assert fake.loads == [(MODEL, 8192)]
    assert fake.reloads == 0


async def test_without_a_pin_no_num_ctx_is_sent_and_the_server_default_applies(ollama):
    fake, provider = ollama

    await chat(provider, MODEL)

    assert "num_ctx" not in (fake.chat_requests[0].body.get("options") or {})
    assert fake.chat_requests[0].window == 4096


async def test_changing_the_pin_reloads_the_model_as_ollama_does(ollama):
    fake, provider = ollama

    await chat(provider, MODEL, options=ChatOptions(num_ctx=8192))
    await chat(provider, MODEL, options=ChatOptions(num_ctx=16384))

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
    assert usage.completion_tokens == 2
    assert usage.cached_tokens is None  # Ollama does not report it: unknown, not 0
    assert usage.prompt_eval_s is not None and usage.prompt_eval_s > 0
    assert usage.eval_s is not None and usage.eval_s > 0


async def test_an_over_long_prompt_is_cut_silently_and_only_the_usage_shows_it(ollama):
    fake, provider = ollama
    history = [system("You are terse.")]
    history += [user(" ".join(["filler"] * 500)) for _ in range(20)]
    history.append(user("What was my first question?"))

    answer = await chat(provider, MODEL, history, ChatOptions(num_ctx=2048))

    request = fake.chat_requests[0]
    assert request.prompt_tokens > 2048
    assert request.truncated
    assert answer.done.usage.prompt_tokens < request.prompt_tokens
    assert answer.done.usage.prompt_tokens <= 2048


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
