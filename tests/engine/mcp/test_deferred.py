"""The deferred pair on its own: what search_tools loads, and what call_tool refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp_types as types

from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import brim_tool, entries
from engine.mcp.deferred import DeferredTools
from engine.tools import ToolContext, ToolRegistry

SERVER = McpServer("clock", command=("unused",))
LISTED = [
    types.Tool(
        name="now",
        description="The current time in a timezone",
        input_schema={
            "type": "object",
            "properties": {"timezone": {"type": "string"}, "digits": {"type": "integer"}},
            "required": ["timezone"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="alarm",
        description="Set an alarm",
        input_schema={"type": "object", "properties": {"at": {"type": "string"}}},
    ),
]


def _pair(calls: list[tuple[str, dict[str, Any]]]) -> tuple[DeferredTools, ToolRegistry]:
    async def call(server: str, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        calls.append((tool, args))
        return types.CallToolResult(content=[types.TextContent(type="text", text="12:00")])

    listed = entries(SERVER, LISTED)

    async def catalog() -> list:
        return listed

    deferred = DeferredTools(catalog, lambda e: brim_tool(e, call), dict)
    return deferred, ToolRegistry(deferred.tools())


def _run(registry: ToolRegistry, name: str, args: dict[str, Any], tmp_path: Path) -> str:
    ctx = ToolContext(workspace=tmp_path)
    return asyncio.run(registry.call(name, json.dumps(args), ctx)).content


def test_search_loads_the_best_match_and_shows_its_schema_but_not_the_others(tmp_path: Path):
    deferred, registry = _pair([])
    text = _run(registry, "search_tools", {"query": "current time"}, tmp_path)
    assert text.splitlines()[0] == "clock__now: The current time in a timezone"
    assert '"name": "clock__now"' in text and '"timezone"' in text
    assert '"at"' not in text  # the alarm's schema stays out
    assert list(deferred.loaded) == ["clock__now"]


def test_call_tool_refuses_a_tool_not_loaded_and_arguments_its_schema_refuses(tmp_path: Path):
    calls: list[tuple[str, dict[str, Any]]] = []
    _, registry = _pair(calls)
    refused = _run(registry, "call_tool", {"name": "clock__now", "arguments": {}}, tmp_path)
    assert "is not loaded: find it with search_tools first" in refused
    _run(registry, "search_tools", {"query": "time"}, tmp_path)
    missing = _run(registry, "call_tool", {"name": "clock__now", "arguments": {}}, tmp_path)
    assert "clock__now needs timezone (string)" in missing
    wrong = {"name": "clock__now", "arguments": {"timezone": "UTC", "digits": "many"}}
    assert "argument 'digits' must be an integer" in _run(registry, "call_tool", wrong, tmp_path)
    good = {"name": "clock__now", "arguments": {"timezone": "UTC", "digits": "2"}}
    assert _run(registry, "call_tool", good, tmp_path) == "12:00"
    assert calls == [("now", {"timezone": "UTC", "digits": 2})]  # checked, then coerced


def test_a_tool_that_may_change_things_asks_and_a_read_only_one_does_not():
    now, alarm = sorted(entries(SERVER, LISTED), key=lambda e: e.tool != "now")
    assert not now.needs_approval and alarm.needs_approval
    auto = McpServer("clock", command=("unused",), approve="auto")
    assert not any(e.needs_approval for e in entries(auto, LISTED))
