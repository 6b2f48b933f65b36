"""vLLM and SGLang: the served `max_model_len`, LoRA cards, exact vLLM counts, cached-token
reporting (absent vs 0), and overflow in every envelope."""

from __future__ import annotations

import pytest

from engine.messages import system, user
from engine.providers.base import ChatOptions
from engine.providers.errors import ContextOverflow, ModelNotFound
from engine.providers.sglang import SglangProvider
from engine.providers.vllm import VllmProvider
from tests.engine.providers.conftest import chat
from tests.helpers.fake_engines import FakeSglang, FakeVllm

pytestmark = pytest.mark.anyio
QWEN = "Qwen/Qwen2.5-7B-Instruct"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
PREFIX = [system("You are terse. " * 40), user("first question")]


async def test_vllm_reports_the_max_model_len_of_the_matching_card(anyio_backend):
    with FakeVllm(QWEN, max_model_len=32768) as fake:
        provider = VllmProvider(fake.url)
        try:
            report = await provider.report(QWEN)
        finally:
            await provider.aclose()

    assert (report.provider, report.served, report.warnings) == ("vllm", 32768, [])


async def test_a_lora_card_without_max_model_len_inherits_its_parents(anyio_backend):
    with FakeVllm(QWEN, max_model_len=16384, lora={"sql-lora": QWEN}) as fake:
        provider = VllmProvider(fake.url)
        try:
            report = await provider.report("sql-lora")
            models = {m.id: m for m in await provider.list_models()}
        finally:
            await provider.aclose()

    assert report.served == 16384
    assert models["sql-lora"].parent == QWEN
    assert models["sql-lora"].served_window == 16384


async def test_an_unknown_model_on_a_server_of_several_names_what_it_does_serve(anyio_backend):
    with FakeVllm(QWEN, also_serves=(LLAMA,)) as fake:
        provider = VllmProvider(fake.url)
        try:
            with pytest.raises(ModelNotFound) as caught:
                await provider.report("qwen2.5")
        finally:
            await provider.aclose()

    assert QWEN in str(caught.value) and LLAMA in str(caught.value)


async def test_a_server_restarted_under_another_name_is_followed_and_the_new_id_named(
    anyio_backend,
):
    """The agent still names `smol`; the server now serves its one model as QWEN (LoRA cards
    do not count). Brim reports the served id, says so once, and sends it."""
    with FakeVllm(QWEN, lora={"sql-lora": QWEN}) as fake:
        provider = VllmProvider(fake.url)
        try:
            report = await provider.report("smol")
            counted = await provider.count_prompt("smol", PREFIX, [])
            usage = (await chat(provider, "smol", PREFIX)).done.usage
        finally:
            await provider.aclose()

    assert report.model == QWEN
    (notice,) = report.notices
    assert (notice.kind, notice.details) == ("model_renamed", {"model": "smol", "served": QWEN})
    assert f"'{QWEN}'" in notice.text and "'smol'" in notice.text
    assert counted == usage.prompt_tokens
    assert [r.body["model"] for r in fake.chat_requests] == [QWEN]
    assert fake.requests_to("/tokenize")[0].body["model"] == QWEN


async def test_a_restart_under_another_name_mid_conversation_is_followed_on_the_404(
    anyio_backend,
):
    """The server restarts between two answers: the next request's 404 ("The model `smol`
    does not exist. Valid aliases: …") sends Brim to /v1/models, and the answer comes from the
    one model served, under its new id."""
    with FakeVllm("smol") as fake:
        provider = VllmProvider(fake.url)
        try:
            await provider.report("smol")
            fake.model = QWEN  # restarted with --served-model-name QWEN
            usage = (await chat(provider, "smol", PREFIX)).done.usage
        finally:
            await provider.aclose()

    assert usage.prompt_tokens
    assert [r.body["model"] for r in fake.chat_requests] == ["smol", QWEN]


async def test_no_model_named_says_to_set_one_and_lists_what_is_served(anyio_backend):
    with FakeVllm(QWEN) as fake:
        provider = VllmProvider(fake.url)
        try:
            with pytest.raises(ModelNotFound) as caught:
                await provider.report("")
        finally:
            await provider.aclose()

    message = str(caught.value)
    assert "set `model`" in message and QWEN in message
    assert "''" not in message


async def test_a_vllm_agent_pointed_at_sglang_is_warned(anyio_backend):
    with FakeSglang(LLAMA) as fake:
        provider = VllmProvider(fake.url)
        try:
            report = await provider.report(LLAMA)
        finally:
            await provider.aclose()

    assert len(report.warnings) == 1
    assert "'sglang'" in report.warnings[0]


async def test_vllm_count_prompt_is_exactly_what_the_chat_then_costs(anyio_backend):
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
    messages = [system("You are terse."), user("List the files, please.")]
    with FakeVllm(QWEN) as fake:
        provider = VllmProvider(fake.url)
        try:
            counted = await provider.count_prompt(QWEN, messages, tools)
            usage = (await chat(provider, QWEN, messages, ChatOptions(tools=tools))).done.usage
        finally:
            await provider.aclose()

    assert counted == usage.prompt_tokens
    assert fake.requests_to("/tokenize")[0].body["model"] == QWEN


async def test_vllm_without_the_details_flag_reports_no_cache_figure(anyio_backend):
    with FakeVllm(QWEN, prompt_tokens_details=False) as fake:
        provider = VllmProvider(fake.url)
        try:
            await chat(provider, QWEN, PREFIX)
            second = (await chat(provider, QWEN, PREFIX)).done.usage
        finally:
            await provider.aclose()

    assert second.cached_tokens is None


async def test_vllm_with_the_details_flag_reports_zero_then_whole_blocks(anyio_backend):
    with FakeVllm(QWEN, prompt_tokens_details=True) as fake:
        provider = VllmProvider(fake.url)
        try:
            first = (await chat(provider, QWEN, PREFIX)).done.usage
            second = (await chat(provider, QWEN, [*PREFIX, user("more")])).done.usage
        finally:
            await provider.aclose()

    assert first.cached_tokens == 0  # an explicit 0 stays 0
    assert second.cached_tokens and second.cached_tokens % 16 == 0


async def test_sglang_reports_cached_tokens_only_when_there_are_some(anyio_backend):
    with FakeSglang(LLAMA, cache_report=True) as fake:
        provider = SglangProvider(fake.url)
        try:
            first = (await chat(provider, LLAMA, PREFIX)).done.usage
            second = (await chat(provider, LLAMA, PREFIX)).done.usage
        finally:
            await provider.aclose()

    assert first.cached_tokens is None  # SGLang leaves the field out at 0
    assert second.cached_tokens == second.prompt_tokens - 1


async def test_sglang_is_never_asked_for_its_server_info(anyio_backend):
    with FakeSglang(LLAMA, context_length=32768) as fake:
        provider = SglangProvider(fake.url)
        try:
            report = await provider.report(LLAMA)
            await provider.list_models()
            await chat(provider, LLAMA)
        finally:
            await provider.aclose()

    assert report.served == 32768
    assert fake.requests_to("/get_server_info") == []
    assert await provider.count_prompt(LLAMA, PREFIX, []) is None


LONG = [user(" ".join(["filler"] * 5000))]


@pytest.mark.parametrize("envelope", ["new", "flat"])
async def test_vllm_overflow_in_either_envelope_carries_the_numbers(envelope, anyio_backend):
    with FakeVllm(QWEN, max_model_len=4096, error_envelope=envelope) as fake:
        provider = VllmProvider(fake.url)
        try:
            with pytest.raises(ContextOverflow) as caught:
                await chat(provider, QWEN, LONG)
        finally:
            await provider.aclose()

    assert caught.value.status == 400
    assert caught.value.window == 4096
    counted = fake.chat_requests[0].prompt_tokens
    if envelope == "flat":
        assert caught.value.prompt_tokens == counted
    else:  # current builds stop tokenizing one token past the room: a floor, not a size
        assert caught.value.prompt_tokens is None
        assert caught.value.prompt_floor is not None and caught.value.prompt_floor <= counted


async def test_an_older_vllm_rejects_a_completion_that_would_not_fit_naming_its_room(
    anyio_backend,
):
    with FakeVllm(QWEN, max_model_len=4096, error_envelope="flat") as fake:
        provider = VllmProvider(fake.url)
        try:
            with pytest.raises(ContextOverflow) as caught:
                await chat(provider, QWEN, options=ChatOptions(max_tokens=4090))
        finally:
            await provider.aclose()

    assert (caught.value.window, caught.value.output_tokens) == (4096, 4090)
    assert caught.value.prompt_tokens == fake.chat_requests[0].prompt_tokens


async def test_a_current_vllm_cuts_a_completion_that_would_not_fit_at_the_room_left(
    anyio_backend,
):
    """vLLM 0.32 answers a prompt plus max_tokens above the window: the output is lowered to
    the room left and the answer ends with finish_reason "length"."""
    with FakeVllm(QWEN, max_model_len=64) as fake:
        fake.script_reply("word " * 80)
        provider = VllmProvider(fake.url)
        try:
            result = await chat(provider, QWEN, PREFIX[1:], ChatOptions(max_tokens=60))
        finally:
            await provider.aclose()

    usage = result.done.usage
    assert result.done.finish_reason == "length"
    assert usage.prompt_tokens is not None and usage.completion_tokens is not None
    assert usage.prompt_tokens + usage.completion_tokens == 64


async def test_sglang_overflow_is_a_context_overflow_with_the_numbers(anyio_backend):
    with FakeSglang(LLAMA, context_length=4096) as fake:
        provider = SglangProvider(fake.url)
        try:
            with pytest.raises(ContextOverflow) as caught:
                await chat(provider, LLAMA, LONG)
        finally:
            await provider.aclose()

    assert (caught.value.prompt_tokens, caught.value.window) == (
        fake.chat_requests[0].prompt_tokens,
        4096,
    )
