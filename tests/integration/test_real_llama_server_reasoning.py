"""The real llama-server, made to reason with the bundled SmolLM2: a grammar forces a
`<think>` block before every answer, and a chat template renders an assistant message's
`reasoning_content`. With `--reasoning-format deepseek` the server streams the block as
`reasoning_content`; with `none` it leaves it in the content and Brim's splitter takes it
out. Either way the user gets the reasoning apart and an answer without `<think>` in it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from bench._llama_server import running_llama_server
from engine.messages import ToolCall, assistant, system, tool_result, user
from engine.providers.base import ChatOptions, EngineReport, ReasoningDelta, TextDelta
from engine.providers.llamacpp import LlamaCppProvider
from tests.helpers.reasoning_server import reasoning_server_args

pytestmark = [pytest.mark.slow, pytest.mark.llama_server]

PROMPT = [system("You are terse."), user("Why is the sky blue?")]
CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')
# A finished turn's reasoning, then the running tool-calling turn's.
HISTORY = [
    user("Hello."),
    assistant("Hi.", reasoning="A greeting: answer in kind."),
    user("Read a.txt."),
    assistant("", (CALL,), reasoning="The user wants the file read."),
    tool_result(CALL, "Nothing much."),
]


def _ask(url: str) -> tuple[EngineReport, list[object], str]:
    """The report, one answer's items, and the prompt the server renders for HISTORY."""

    async def scenario() -> tuple[EngineReport, list[object], str]:
        provider = LlamaCppProvider(url, timeout=120.0)
        try:
            report = await provider.report("")
            options = ChatOptions(max_tokens=96)
            items = [i async for i in provider.stream_chat("", PROMPT, options)]
            rendered = await provider.render_prompt("", HISTORY, [])
        finally:
            await provider.aclose()
        return report, items, rendered.text if rendered else ""

    return asyncio.run(scenario())


def _parts(items: list[object]) -> tuple[str, str]:
    reasoning = "".join(i.text for i in items if isinstance(i, ReasoningDelta))
    answer = "".join(i.text for i in items if isinstance(i, TextDelta))
    return reasoning, answer


@pytest.mark.parametrize("reasoning_format", ["deepseek", "none"])
def test_the_reasoning_arrives_apart_and_the_answer_holds_no_think_block(
    tmp_path, reasoning_format
):
    with running_llama_server(
        tmp_path, ctx=2048, parallel=1, extra_args=reasoning_server_args(reasoning_format)
    ) as server:
        caps = httpx.get(f"{server.url}/props", timeout=10).json().get("chat_template_caps")
        report, items, rendered = _ask(server.url)
    assert caps.get("supports_preserve_reasoning") is True
    assert report.preserves_reasoning is True
    # The server's own template got the running tool turn's reasoning, not the finished one's.
    assert "The user wants the file read." in rendered
    assert "A greeting" not in rendered
    reasoning, answer = _parts(items)
    assert reasoning.strip(), items
    assert answer.strip(), items
    assert "<think>" not in answer and "</think>" not in answer
    assert "think>" not in reasoning
    kinds = [type(i) for i in items if isinstance(i, ReasoningDelta | TextDelta)]
    assert kinds.index(TextDelta) > kinds.index(ReasoningDelta)  # the thinking came first


def test_the_server_takes_every_reasoning_level_brim_sends(tmp_path):
    """`chat_template_kwargs` with `enable_thinking` and `reasoning_effort`, as Brim maps
    the levels: the real server answers each (a kwarg of the wrong type would be a 400)."""

    async def scenario(url: str) -> list[str]:
        provider = LlamaCppProvider(url, timeout=120.0)
        answers = []
        try:
            for level in ("off", "on", "low"):
                options = ChatOptions(max_tokens=8, reasoning=level)
                items = [i async for i in provider.stream_chat("", PROMPT, options)]
                answers.append("".join(_parts(items)))
        finally:
            await provider.aclose()
        return answers

    with running_llama_server(
        tmp_path, ctx=2048, parallel=1, extra_args=reasoning_server_args("deepseek")
    ) as server:
        answers = asyncio.run(scenario(server.url))
    assert all(answer.strip() for answer in answers), answers
