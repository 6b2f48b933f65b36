"""llama-server: per-slot windows, the unified pool, cached tokens, exact counts, overflow."""

from __future__ import annotations

import pytest

from engine.messages import system, user
from engine.providers.base import ChatOptions
from engine.providers.errors import ContextOverflow, ServerError
from engine.providers.llamacpp import LlamaCppProvider
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeLlamaServer

pytestmark = pytest.mark.anyio
MODEL = "SmolLM2-135M-Instruct-Q4_1"
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


async def report_of(fake: FakeLlamaServer, num_ctx: int | None = None):
    provider = LlamaCppProvider(fake.url, num_ctx=num_ctx)
    try:
        return await provider.report(MODEL)
    finally:
        await provider.aclose()


async def test_two_explicit_slots_each_serve_half_the_context(anyio_backend):
    with FakeLlamaServer(n_ctx=4096, slots=2, n_ctx_train=8192) as fake:
        report = await report_of(fake)

    assert (report.served, report.slots, report.model_max) == (2048, 2, 8192)
    assert report.unified_pool is False
    assert report.warnings == []


async def test_a_pin_above_what_a_slot_holds_is_reported_as_refused_by_the_split(anyio_backend):
    """The provider is built with the pin and compares llama-server's slots with it: the
    refusal is a notice with its figures and cause (engine/window/pin_check.py)."""
    with FakeLlamaServer(n_ctx=4096, slots=2, n_ctx_train=8192) as fake:
        refused_report = await report_of(fake, num_ctx=4096)
        held_report = await report_of(fake, num_ctx=1024)
        unpinned_report = await report_of(fake)

    (refused,) = refused_report.notices
    assert refused.kind == "pin_not_honoured"
    assert (refused.details["asked"], refused.details["allocated"]) == (4096, 2048)
    assert refused.details["cause"] == "parallel_split"
    assert "4,096" in refused.text and "2,048 tokens per slot" in refused.text
    assert held_report.notices == [] and unpinned_report.notices == []


async def test_slots_sharing_one_unified_pool_are_flagged_with_an_explanation(anyio_backend):
    with FakeLlamaServer(n_ctx=8192, slots=4, kv_unified=True) as fake:
        report = await report_of(fake)

    assert (report.served, report.slots) == (8192, 4)
    assert report.unified_pool is True
    assert len(report.warnings) == 1
    assert "share one KV pool" in report.warnings[0]
    assert "8192" in report.warnings[0]
    assert "--parallel" in report.warnings[0]


async def test_explicit_slots_on_a_build_without_meta_do_not_warn(anyio_backend):
    with FakeLlamaServer(n_ctx=4096, slots=2, meta_n_ctx=False) as fake:
        report = await report_of(fake)

    assert report.served == 2048
    assert report.unified_pool is False
    assert report.warnings == []


async def test_one_slot_never_warns_about_sharing(anyio_backend):
    with FakeLlamaServer(n_ctx=4096, slots=1, meta_n_ctx=False) as fake:
        report = await report_of(fake)

    assert (report.served, report.slots, report.warnings) == (4096, 1, [])


async def test_a_server_still_loading_says_so_and_becomes_ready(anyio_backend):
    with FakeLlamaServer(loading=True) as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            assert await provider.ready() is False
            with pytest.raises(ServerError) as caught:
                await provider.report(MODEL)
            fake.loading = False
            assert await provider.ready() is True
            report = await provider.report(MODEL)
        finally:
            await provider.aclose()

    assert caught.value.status == 503
    assert "still loading" in str(caught.value)
    assert report.served == 4096


async def test_count_prompt_is_exactly_what_the_chat_then_costs(anyio_backend):
    messages = [system("You are terse."), user("Summarise the plot of Hamlet in one line.")]
    with FakeLlamaServer(default_system_prompt="You are a helpful assistant.") as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            counted = await provider.count_prompt(MODEL, messages, [])
            counted_bare = await provider.count_prompt(MODEL, messages[1:], [])
            counted_tools = await provider.count_prompt(MODEL, messages, TOOLS)
            usage = (await chat(provider, MODEL, messages)).done.usage
            usage_bare = (await chat(provider, MODEL, messages[1:])).done.usage
            usage_tools = (
                await chat(provider, MODEL, messages, ChatOptions(tools=TOOLS))
            ).done.usage
        finally:
            await provider.aclose()

    assert counted == usage.prompt_tokens
    assert counted_bare == usage_bare.prompt_tokens  # the server's default system prompt too
    assert counted_tools == usage_tools.prompt_tokens
    assert counted_tools > counted
    tokenize = fake.requests_to("/tokenize")[0].body
    assert tokenize["add_special"] is True and tokenize["parse_special"] is True


async def test_count_prompt_is_none_when_the_server_cannot_render_the_template(anyio_backend):
    with FakeLlamaServer() as fake:
        fake.override("/apply-template", 500, '{"error": {"code": 500, "message": "no jinja"}}')
        provider = LlamaCppProvider(fake.url)
        try:
            assert await provider.count_prompt(MODEL, [user("hi")], TOOLS) is None
        finally:
            await provider.aclose()


async def test_a_reused_prefix_is_reported_as_cached_tokens(anyio_backend):
    history = [system("You are terse. " * 20), user("first question")]
    with FakeLlamaServer() as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            first = (await chat(provider, MODEL, history)).done.usage
            second = (await chat(provider, MODEL, [*history, user("and another")])).done.usage
        finally:
            await provider.aclose()

    assert first.cached_tokens == 0  # reported, and zero: not the same as unknown
    assert second.cached_tokens is not None and second.cached_tokens > 40
    assert second.prompt_tokens == fake.chat_requests[1].prompt_tokens
    assert second.prompt_eval_s is not None and second.eval_s is not None


async def test_cached_tokens_come_from_timings_when_usage_lacks_them(anyio_backend):
    history = [system("You are terse. " * 20), user("first question")]
    with FakeLlamaServer(cached_details=False) as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            await chat(provider, MODEL, history)
            second = (await chat(provider, MODEL, history)).done.usage
        finally:
            await provider.aclose()

    assert second.cached_tokens == second.prompt_tokens - 1  # all but the last token reused


async def test_the_stream_asks_for_usage(anyio_backend):
    with FakeLlamaServer() as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            await chat(provider, MODEL)
        finally:
            await provider.aclose()

    assert fake.chat_requests[0].body["stream_options"] == {"include_usage": True}


LONG = [user(" ".join(["filler"] * 3000))]


@pytest.mark.parametrize("style", ["http400", "legacy400", "sse_error_field", "sse_data_error"])
async def test_every_overflow_shape_is_a_context_overflow(style, anyio_backend):
    with FakeLlamaServer(n_ctx=4096, slots=2, overflow_style=style) as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            with pytest.raises(ContextOverflow) as caught:
                await chat(provider, MODEL, LONG)
        finally:
            await provider.aclose()

    sent = fake.chat_requests[0].prompt_tokens
    if style == "http400":
        assert (caught.value.prompt_tokens, caught.value.window) == (sent, 2048)
        assert caught.value.status == 400
    if style.startswith("sse"):
        assert caught.value.status == 200


async def test_list_models_carries_the_training_length(anyio_backend):
    with FakeLlamaServer(n_ctx=4096, n_ctx_train=8192) as fake:
        provider = LlamaCppProvider(fake.url)
        try:
            models = await provider.list_models()
        finally:
            await provider.aclose()

    assert [(m.id, m.model_max, m.owned_by) for m in models] == [(MODEL, 8192, "llamacpp")]
