"""One conversation's MCP servers: started lazily, faults said once, stopped with it.

`prepare` starts the servers (at the first turn, not when a conversation opens) and learns
their tools; `attach` puts the always-on `search_tools`/`call_tool` pair into a tool
registry, with the tools of the servers that go eager: those whose table says
`tier = "always"`, and those whose schemas cost at most `EAGER_MAX_SHARE` of the served
window. The decision is taken once per conversation, so the tools block stays one byte
string. A fault (a server that cannot start, dies, hangs, speaks no JSON-RPC) is an
`ErrorEvent` of its kind, and the tool call that met it an error result the model reads.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from engine.config.mcp_servers import McpServer
from engine.events import ErrorEvent, EventSink
from engine.mcp.catalog import McpEntry, brim_tool, entries
from engine.mcp.connection import McpConnection
from engine.mcp.deferred import DeferredTools
from engine.mcp.errors import McpFault
from engine.report.mcp_rows import McpServerRow, McpToolsReport
from engine.tools.errors import ToolError
from engine.tools.registry import Tool, ToolRegistry

# A server whose schemas take at most this share of the served window goes eager.
EAGER_MAX_SHARE = 0.02


@dataclass(frozen=True)
class ServerCost:
    """What one server's schemas cost in the request, and where they went."""

    server: str
    tools: int
    tokens: int
    eager: bool


class McpHub:
    def __init__(self, servers: tuple[McpServer, ...], emit: EventSink | None = None) -> None:
        self.servers = servers
        self._emit = emit
        self._connections = {s.name: McpConnection(s) for s in servers}
        self._entries: dict[str, list[McpEntry]] = {}
        self._eager: dict[str, bool] | None = None  # decided once per conversation
        self.costs: tuple[ServerCost, ...] = ()
        self.deferred = DeferredTools(self._deferred_entries, self._tool, self._eager_tools)

    def __bool__(self) -> bool:
        return bool(self.servers)

    @classmethod
    def for_agent(cls, agent: Any, emit: EventSink | None = None) -> McpHub:
        return cls(tuple(getattr(agent, "mcp", ())), emit)

    # -- lifecycle -----------------------------------------------------------------------

    async def prepare(self) -> bool:
        """Start every server not started yet (together) and learn its tools. True when
        tools were learned before the eager servers were chosen: a registry attached
        before then is to be attached again (the loop wired afresh)."""
        waiting = [s for s in self.servers if s.name not in self._entries]
        started = await asyncio.gather(*(self._start(s) for s in waiting))
        return self._eager is None and any(started)

    async def _start(self, server: McpServer) -> bool:
        try:
            tools = await self._connections[server.name].start()
        except McpFault as fault:
            self._fault(fault)
            return False
        self._entries[server.name] = entries(server, tools)
        return True

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    # -- the registry ------------------------------------------------------------------

    def attach(self, registry: ToolRegistry, count_text: Callable[[str], int], window: int) -> None:
        """The always-on pair and the eager servers' tools, into `registry`."""
        if not self.servers:
            return
        if self._eager is None and self._entries:
            self._decide(count_text, window)
        for tool in [*self.deferred.tools(), *self._eager_tools().values()]:
            if tool.name not in registry:
                registry.register(tool)

    def _decide(self, count_text: Callable[[str], int], window: int) -> None:
        eager: dict[str, bool] = {}
        costs = []
        for server in self.servers:
            listed = self._entries.get(server.name)
            if listed is None:
                continue
            schemas = [brim_tool(e, self.call).schema() for e in listed]
            tokens = count_text(json.dumps(schemas, ensure_ascii=False)) if schemas else 0
            eager[server.name] = server.tier == "always" or tokens <= EAGER_MAX_SHARE * window
            costs.append(ServerCost(server.name, len(listed), tokens, eager[server.name]))
        self._eager = eager
        self.costs = tuple(costs)

    def _eager_tools(self) -> dict[str, Tool]:
        chosen = self._eager or {}
        return {
            e.name: self._tool(e)
            for name, listed in self._entries.items()
            if chosen.get(name)
            for e in listed
        }

    def _tool(self, entry: McpEntry) -> Tool:
        return brim_tool(entry, self.call)

    async def _deferred_entries(self) -> list[McpEntry]:
        await self.prepare()  # a server that failed before is tried again
        chosen = self._eager or {}
        return [e for name, listed in self._entries.items() if not chosen.get(name) for e in listed]

    # -- calls ---------------------------------------------------------------------------

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        try:
            return await self._connections[server].call(tool, args)
        except McpFault as fault:
            self._fault(fault)
            raise ToolError(
                f"{fault} ({fault.kind}); the conversation goes on without it"
            ) from None

    def report(self, count_tools: Callable[[list[Any]], int], schemas: list[Any]) -> McpToolsReport:
        """What `/context` says: the always-on tools block (`schemas`, as the loop sends
        it), each server's tier and cost, and the deferred schemas loaded so far."""
        rows = tuple(
            McpServerRow(c.server, c.tools, c.tokens, "eager" if c.eager else "deferred")
            for c in self.costs
        )
        loaded = tuple(
            (name, count_tools([tool.schema()])) for name, tool in self.deferred.loaded.items()
        )
        return McpToolsReport(len(schemas), count_tools(schemas), rows, loaded)

    def _fault(self, fault: McpFault) -> None:
        if self._emit is not None:
            data = {"server": fault.server, "fault": fault.kind, "tool": fault.tool}
            self._emit(ErrorEvent(fault.event_kind, str(fault), data=data, retryable=True))
