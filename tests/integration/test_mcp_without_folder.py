"""An agent with MCP servers in a conversation without a folder: the MCP tools go out (a
clock needs no folder), the file tools do not, and what is withheld is said once, as data.
With the registry's real mcp-server-time over stdio."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.events import ErrorEvent, Event, NoticeEvent
from engine.messages import ToolCall
from engine.paths import BrimPaths
from engine.providers.base import EngineReport
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine, Request

BIN = Path(sys.executable).parent
TIME = McpServer("time", command=(str(BIN / "mcp-server-time"), "--local-timezone", "UTC"))
FILE_TOOLS = {
    "read_file",
    "list_directory",
    "search_files",
    "write_file",
    "edit_file",
    "run_command",
}

pytestmark = pytest.mark.skipif(
    not (BIN / "mcp-server-time").exists(), reason="the registry's MCP servers are not installed"
)


class NoToolCallsEngine(InProcessEngine):
    """An engine that says its model cannot call tools."""

    async def report(self, model: str) -> EngineReport:
        return replace(await super().report(model), tool_calls=False)


def _session(tmp_path: Path, events: list[Event], engine: InProcessEngine) -> ChatSession:
    agent = AgentConfig(name="t", provider="llamacpp", model="fake-model", mcp=(TIME,))
    home = BrimPaths.resolve(tmp_path / "home")
    return ChatSession(agent, home, events.append, provider=engine, workspace=None)


def _names(request: Request) -> set[str]:
    return {t["function"]["name"] for t in request.options.tools}


def _withheld(events: list[Event]) -> list[NoticeEvent]:
    return [e for e in events if isinstance(e, NoticeEvent) and e.kind == "tools_unavailable"]


def test_without_a_folder_the_agent_still_reads_the_real_clock_and_is_told_once_what_is_withheld(
    tmp_path: Path,
):
    engine = InProcessEngine(window=8192)
    events: list[Event] = []

    async def scenario() -> None:
        session = _session(tmp_path, events, engine)
        await session.start()
        engine.script(
            tool_calls=[ToolCall("c1", "search_tools", json.dumps({"query": "current time"}))]
        )
        call = {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
        engine.script(tool_calls=[ToolCall("c2", "call_tool", json.dumps(call))])
        engine.script("It is morning in UTC.")
        await session.send("What time is it?")
        engine.script("You're welcome.")
        await session.send("Thanks")
        await session.close()

    asyncio.run(scenario())
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    first = engine.answered[0]
    assert {"search_tools", "call_tool"} <= _names(first)
    assert not FILE_TOOLS & _names(first)  # the file tools still need a folder
    called = [m.content for m in engine.answered[2].messages if m.role == "tool"][-1]
    assert json.loads(called)["datetime"].startswith(time.strftime("%Y-%m-%d", time.gmtime()))
    (system,) = [m for m in first.messages if m.role == "system"]
    assert "Working directory" not in system.content
    (told,) = _withheld(events)  # once, over two turns
    assert told.details == {"reason": "no_folder", "withheld": "files"}


def test_a_model_that_cannot_call_tools_is_sent_no_mcp_tools_and_the_user_is_told_why(
    tmp_path: Path,
):
    engine = NoToolCallsEngine(window=8192)
    events: list[Event] = []

    async def scenario() -> None:
        session = _session(tmp_path, events, engine)
        await session.start()
        engine.script("Hello.")
        await session.send("What time is it?")
        await session.close()

    asyncio.run(scenario())
    assert engine.answered and not engine.answered[0].options.tools
    (told,) = _withheld(events)
    assert told.details == {"reason": "model_cannot_call_tools", "model": "fake-model"}
    assert "time" in told.text
