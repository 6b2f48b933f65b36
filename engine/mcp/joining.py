"""Loaded deferred tools joining the tools block: at a compaction, or at once in the fallback.

A tool `search_tools` loaded is called through `call_tool` while the cached prefix stands.
A compaction rebuilds the prefix anyway (the history after the system message is new), so
when one finishes, every tool loaded so far joins the request's `tools` list, under its own
name (`server__tool`) and with its schema: the model may then call it directly. Before
then the tools block is not touched, byte for byte.

The fallback: a model that cannot use the indirection calls a loaded tool by its own name
(the engine answers that there is no such tool) or gives `call_tool` arguments the loaded
schema refuses. After `MISSES_BEFORE_FALLBACK` such misses in a row, the loaded tools join
the block at once, and so does every later load, with a notice (`NOTICE_MCP_TOOLS_JOINED`)
that the engine evaluates the prompt again from the start. (A model whose engine reports it
cannot call tools at all gets no MCP tools: the agent probe says so, engine/mcp/probe.py.)
"""

from __future__ import annotations

from typing import Protocol

from engine.events import NOTICE_MCP_TOOLS_JOINED, CompactionEvent, Event, EventSink, NoticeEvent
from engine.mcp.deferred import DeferredTools
from engine.tools.registry import Tool, ToolRegistry

MISSES_BEFORE_FALLBACK = 2
REASON_COMPACTION = "compaction"
REASON_CALLS_MISSED = "calls_missed"


class BlockRunner(Protocol):
    """The loop's tool runner: its registry, and whether it advertises compact schemas."""

    registry: ToolRegistry
    compact: bool

    def use_compact_schemas(self) -> None: ...

    def use_full_schemas(self) -> None: ...


def fallback_text(tools: int) -> str:
    joined = (
        f"its {tools} loaded MCP tool{'s' if tools != 1 else ''} join"
        if tools
        else "MCP tools join"
    )
    return (
        "The model does not call MCP tools through call_tool, so "
        f"{joined} the tools block, each as it is loaded: the engine evaluates the prompt "
        "again from the start once for each."
    )


class Joining:
    """Which loaded tools are in the tools block, and the fallback that puts them there."""

    def __init__(self, deferred: DeferredTools, emit: EventSink | None = None) -> None:
        self._deferred = deferred
        self._emit = emit
        self._joined: dict[str, Tool] = {}
        self._runner: BlockRunner | None = None
        self.misses = 0
        self.fallback = False
        deferred.on_load = self._loaded
        deferred.on_miss = self.missed
        deferred.on_call = self._called

    @property
    def joined(self) -> list[str]:
        return list(self._joined)

    def tools(self) -> list[Tool]:
        """The joined tools (a registry wired afresh registers them again)."""
        return list(self._joined.values())

    def bind(self, runner: BlockRunner) -> None:
        """The runner whose tools block the joined tools go into."""
        self._runner = runner

    def watching(self, sink: EventSink) -> EventSink:
        """`sink`, and a finished compaction joins the loaded tools."""

        def on_event(event: Event) -> None:
            sink(event)
            if isinstance(event, CompactionEvent) and event.phase == "finished":
                self.join(REASON_COMPACTION)

        return on_event

    def join(self, reason: str) -> int:
        """Every loaded tool not in the block yet, into it; how many joined."""
        runner = self._runner
        if runner is None:
            return 0
        added = 0
        for name, tool in self._deferred.loaded.items():
            if name in self._joined:
                continue
            self._joined[name] = tool
            if name not in runner.registry:
                runner.registry.register(tool)
            added += 1
        if added:  # the block is built again, in the mode it was in (the same bytes before)
            if runner.compact:
                runner.use_compact_schemas()
            else:
                runner.use_full_schemas()
        return added

    def unknown_tool(self, name: str) -> None:
        """The model called a tool the block does not hold: a miss when it is a loaded one."""
        if name in self._deferred.loaded and name not in self._joined:
            self.missed(name)

    def missed(self, name: str) -> None:
        self.misses += 1
        if self.fallback or self.misses < MISSES_BEFORE_FALLBACK:
            return
        self.fallback = True
        self._deferred.direct = True
        added = self.join(REASON_CALLS_MISSED)
        if self._emit is not None:
            self._emit(
                NoticeEvent(
                    "warning",
                    fallback_text(added),
                    kind=NOTICE_MCP_TOOLS_JOINED,
                    details={"reason": REASON_CALLS_MISSED, "misses": self.misses, "tools": added},
                )
            )

    def _called(self, name: str) -> None:
        self.misses = 0  # call_tool worked: the model can use it

    def _loaded(self, name: str) -> None:
        if self.fallback:
            self.join(REASON_CALLS_MISSED)
