"""Loaded MCP tools and the tools block, without a server: a compaction joins them, a
model that misses call_tool twice in a row gets them at once, and a miss followed by a
call that works is no fallback."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config.mcp_servers import McpServer
from engine.events import NOTICE_MCP_TOOLS_JOINED, CompactionEvent, Event, NoticeEvent
from engine.mcp.catalog import brim_tool, entries
from engine.mcp.deferred import DeferredTools
from engine.mcp.joining import Joining
from engine.messages import ToolCall
from engine.session.adapters import RegistryRunner
from engine.tools import ToolContext, ToolRegistry

SERVER = McpServer("clock", command=("unused",))
ALARM = types.Tool(
    name="alarm",
    description="Set an alarm",
    input_schema={"type": "object", "properties": {"at": {"type": "string"}}, "required": ["at"]},
)
NOW = types.Tool(
    name="now",
    description="The current time in a timezone",
    input_schema={
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
    },
    annotations=types.ToolAnnotations(read_only_hint=True),
)


def _setup(tmp_path: Path) -> tuple[RegistryRunner, Joining, list[Event]]:
    async def call(server: str, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="12:00")])

    listed = entries(SERVER, [NOW, ALARM])

    async def catalog() -> list:
        return listed

    deferred = DeferredTools(catalog, lambda e: brim_tool(e, call), dict)
    events: list[Event] = []
    joining = Joining(deferred, events.append)
    runner = RegistryRunner(ToolRegistry(deferred.tools()), ToolContext(workspace=tmp_path))
    joining.bind(runner)
    runner.on_unknown = joining.unknown_tool
    return runner, joining, events


def _run(runner: RegistryRunner, name: str, args: dict[str, Any]) -> str:
    return asyncio.run(runner.run(ToolCall("c", name, json.dumps(args)))).content


def _call(args: dict[str, Any]) -> dict[str, Any]:
    return {"name": "clock__now", "arguments": args}


def test_a_finished_compaction_joins_the_loaded_tool_and_a_failed_one_does_not(tmp_path: Path):
    runner, joining, _ = _setup(tmp_path)
    _run(runner, "search_tools", {"query": "time"})
    block = json.dumps(runner.schemas())
    sink = joining.watching(lambda event: None)
    sink(CompactionEvent(phase="started", reason="manual"))
    sink(CompactionEvent(phase="failed", reason="manual"))
    assert json.dumps(runner.schemas()) == block  # not a byte changed
    sink(CompactionEvent(phase="finished", reason="manual"))
    assert [s["function"]["name"] for s in runner.schemas()] == [
        "call_tool",
        "clock__now",
        "search_tools",
    ]
    assert _run(runner, "clock__now", {"timezone": "UTC"}) == "12:00"


def test_two_call_tool_misses_in_a_row_join_the_loaded_tool_with_a_notice(tmp_path: Path):
    runner, _, events = _setup(tmp_path)
    _run(runner, "search_tools", {"query": "time"})
    assert "clock__now needs timezone" in _run(runner, "call_tool", _call({}))
    assert "clock__now" not in runner.registry.names()
    _run(runner, "call_tool", _call({"zone": "UTC"}))
    assert "clock__now" in [s["function"]["name"] for s in runner.schemas()]
    (notice,) = [e for e in events if isinstance(e, NoticeEvent)]
    assert notice.kind == NOTICE_MCP_TOOLS_JOINED
    assert notice.details == {"reason": "calls_missed", "misses": 2, "tools": 1}
    # From then on the search result says to call it directly.
    assert "call clock__now directly" in _run(runner, "search_tools", {"query": "time"})


def test_a_miss_then_a_call_that_works_keeps_the_tools_block(tmp_path: Path):
    runner, joining, events = _setup(tmp_path)
    _run(runner, "search_tools", {"query": "time"})
    block = json.dumps(runner.schemas())
    _run(runner, "call_tool", _call({}))
    assert _run(runner, "call_tool", _call({"timezone": "UTC"})) == "12:00"
    _run(runner, "call_tool", _call({}))
    assert json.dumps(runner.schemas()) == block
    assert not joining.fallback and not events


def test_calling_a_name_never_loaded_is_no_miss(tmp_path: Path):
    runner, joining, _ = _setup(tmp_path)
    for _ in range(3):
        assert _run(runner, "clock__now", {"timezone": "UTC"}).startswith("Error: there is no")
    assert joining.misses == 0  # a tool not loaded: the model is to search first


# What the model may do: load a tool, miss call_tool (or call a loaded tool by its name),
# call one through call_tool, and the ladder's compaction ending one way or the other.
STEPS = st.sampled_from(
    ["load_now", "load_alarm", "miss_args", "miss_name", "call_ok", "compacted", "failed"]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(STEPS, max_size=14))
def test_the_tools_block_changes_only_by_adding_a_loaded_tool_at_a_compaction_or_the_fallback(
    steps: list[str],
):
    with tempfile.TemporaryDirectory() as tmp:
        runner, joining, _ = _setup(Path(tmp))
        sink = joining.watching(lambda event: None)
        for step in steps:
            before = {s["function"]["name"]: json.dumps(s) for s in runner.schemas()}
            was_fallback, misses = joining.fallback, joining.misses
            if step.startswith("load_"):
                _run(runner, "search_tools", {"query": step.removeprefix("load_")})
            elif step == "miss_args":
                _run(runner, "call_tool", _call({}))
            elif step == "miss_name":
                _run(runner, "clock__now", {"timezone": "UTC"})
            elif step == "call_ok":
                _run(runner, "call_tool", _call({"timezone": "UTC"}))
            else:
                sink(
                    CompactionEvent(
                        phase="finished" if step == "compacted" else "failed", reason="manual"
                    )
                )
            after = {s["function"]["name"]: json.dumps(s) for s in runner.schemas()}
            # Nothing in the block ever changes a byte or goes; tools only join it.
            assert {n: after[n] for n in before} == before
            if after != before:
                assert step == "compacted" or joining.fallback
                assert set(after) - set(before) <= set(joining._deferred.loaded)
            if step == "compacted":  # every tool loaded so far is in the block
                assert set(joining._deferred.loaded) <= set(after)
            if joining.fallback and not was_fallback:
                assert step.startswith("miss") and misses + 1 >= 2
