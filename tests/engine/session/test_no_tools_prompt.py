"""The system prompt names tools only when the model is sent them: the bundled model with a
folder is told nothing of tools (and the conversation says once why it has none), while a
model that calls tools keeps the prompt that speaks of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import Event, NoticeEvent
from engine.messages import Message
from engine.paths import BrimPaths
from engine.prompt import system_prompt, tool_free_prompt
from engine.providers.base import ChatOptions, StreamItem
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.resources import prompt
from engine.session import ChatSession


def test_the_default_prompt_gives_way_to_its_tool_free_twin_and_a_users_own_stays():
    default = default_agent().system_prompt
    assert "tools" in default
    assert "tool" not in tool_free_prompt(default).lower()
    mine = "You are my tool-savvy pirate. Answer in rhyme."
    assert tool_free_prompt(mine) == mine


def test_without_tools_the_prompt_names_no_working_directory(tmp_path: Path):
    with_tools = system_prompt(prompt("system"), workspace=tmp_path, tools=True)
    without = system_prompt(prompt("system"), workspace=tmp_path, tools=False)
    assert f"Working directory: {tmp_path}" in with_tools
    assert str(tmp_path) not in without and "tool" not in without.lower()


class RecordingEmbedded(EmbeddedProvider):
    """The embedded engine, keeping what each request gave it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[tuple[list[Message], ChatOptions]] = []

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        self.requests.append((list(messages), options))
        async for item in super().stream_chat(model, messages, options):
            yield item


@pytest.mark.slow
@pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed")
def test_the_bundled_model_with_a_folder_is_told_once_and_sent_no_word_of_tools(tmp_path: Path):
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    events: list[Event] = []
    provider = RecordingEmbedded(n_ctx=2048)
    agent = default_agent().with_changes(num_ctx=2048, max_tokens=16)

    async def chat() -> None:
        session = ChatSession(
            agent,
            BrimPaths.resolve(tmp_path / "home"),
            events.append,
            workspace=ws,
            provider=provider,
        )
        await session.start()
        await session.send("What is in calc.py?")
        await session.send("And what does add return?")
        await session.close()

    asyncio.run(chat())
    notices = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "tools_unavailable"]
    assert len(notices) == 1
    assert notices[0].details["reason"] == "model_cannot_call_tools"
    assert str(ws) in notices[0].text
    assert len(provider.requests) == 2
    for messages, options in provider.requests:
        assert not options.tools
        assert messages[0].role == "system"
        assert "tool" not in messages[0].content.lower()
        assert str(ws) not in messages[0].content
