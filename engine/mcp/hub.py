"""One conversation's MCP servers: started at first use, faults said once, stopped with it.

No server starts when a conversation opens or a turn begins. What the conversation needs
before a server's first use is its tool list, and that comes from the listing the server
gave last (engine/mcp/listing_cache.py). A server starts when it is first needed:
- the first `search_tools` that needs a server whose listing is not known yet;
- the first call of one of its tools (through `call_tool`, or directly when eager);
- at the first turn, a server whose table says `tier = "always"` and whose listing is not
  known: its schemas go into the first request.

`attach` puts the always-on `search_tools`/`call_tool` pair into a tool registry, with the
tools of the servers that go eager: those whose table says `tier = "always"`, and those
whose known schemas cost at most `EAGER_MAX_SHARE` of the served window (a server whose
listing is not known yet is deferred: its cost is unknown). The decision is taken once per
conversation, at the first turn, so the tools block stays one byte string until a
compaction rebuilds the prefix (engine/mcp/joining.py). A fault (a server that cannot
start, dies, hangs, speaks no JSON-RPC) is an `ErrorEvent` of its kind, and the tool call
that met it an error result the model reads.
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
from engine.mcp.joining import Joining
from engine.mcp.listing_cache import ListingCache
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
    def __init__(
        self,
        servers: tuple[McpServer, ...],
        emit: EventSink | None = None,
        listings: ListingCache | None = None,
    ) -> None:
        self.servers = servers
        self._emit = emit
        self._listings = listings
        self._connections = {s.name: McpConnection(s) for s in servers}
        self._entries: dict[str, list[McpEntry]] = {}
        self._prepared = False
        self._attached_early = False  # a registry got the pair before the choice was made
        self._eager: dict[str, bool] | None = None  # decided once per conversation
        self._eager_set: dict[str, Tool] = {}  # their tools, fixed with the decision
        self._count_text: Callable[[str], int] | None = None
        self._tokens: dict[str, int] = {}  # a server's schemas, counted once per listing
        self.deferred = DeferredTools(self._deferred_entries, self._tool, self._eager_tools)
        self.joining = Joining(self.deferred, emit)

    def __bool__(self) -> bool:
        return bool(self.servers)

    @classmethod
    def for_agent(cls, agent: Any, emit: EventSink | None = None, paths: Any = None) -> McpHub:
        """The agent's servers; `paths` (BrimPaths) gives the listings' folder."""
        listings = ListingCache(paths.mcp_listings_dir) if paths is not None else None
        return cls(tuple(getattr(agent, "mcp", ())), emit, listings)

    @property
    def running(self) -> tuple[str, ...]:
        """The servers whose process (or HTTP session) is up now."""
        return tuple(name for name, c in self._connections.items() if c.running)

    # -- lifecycle -----------------------------------------------------------------------

    async def prepare(self) -> bool:
        """At the first turn: the listings kept from earlier runs, and the `always` servers
        whose listing is not known started. True when a registry was attached before
        then (the pair alone): it is to be attached again (the loop wired afresh), and the
        eager servers are chosen then. Later turns: nothing."""
        if self._prepared:
            return False
        self._prepared = True
        for server in self.servers:
            kept = self._listings.read(server) if self._listings is not None else None
            if kept is not None:
                self._learn(server, kept)
        unknown = [s for s in self.servers if s.tier == "always" and s.name not in self._entries]
        await asyncio.gather(*(self._start(s) for s in unknown))
        return self._eager is None and self._attached_early

    async def list_all(self) -> list[McpEntry]:
        """Every server's tools, starting those whose listing is not known (a bench, a test)."""
        await asyncio.gather(*(self._start(s) for s in self.servers if s.name not in self._entries))
        return [e for listed in self._entries.values() for e in listed]

    async def _start(self, server: McpServer) -> bool:
        try:
            tools = await self._connections[server.name].start()
        except McpFault as fault:
            self._fault(fault)
            return False
        self._learn(server, tools, keep=True)
        return True

    def _learn(self, server: McpServer, tools: list[types.Tool], *, keep: bool = False) -> None:
        self._entries[server.name] = entries(server, tools)
        self._tokens.pop(server.name, None)
        if keep and self._listings is not None:
            self._listings.write(server, tools)

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    # -- the registry ------------------------------------------------------------------

    def attach(self, registry: ToolRegistry, count_text: Callable[[str], int], window: int) -> None:
        """The always-on pair, the eager servers' tools and those a compaction (or the
        fallback) joined to the tools block, into `registry`."""
        if not self.servers:
            return
        self._count_text = count_text
        if self._eager is None and self._prepared:
            self._decide(count_text, window)
        self._attached_early = self._attached_early or not self._prepared
        for tool in [*self.deferred.tools(), *self._eager_tools().values(), *self.joining.tools()]:
            if tool.name not in registry:
                registry.register(tool)

    def _decide(self, count_text: Callable[[str], int], window: int) -> None:
        eager: dict[str, bool] = {}
        for server in self.servers:
            known = server.name in self._entries
            cheap = known and self._cost(server.name, count_text) <= EAGER_MAX_SHARE * window
            eager[server.name] = known and (server.tier == "always" or cheap)
        self._eager = eager
        self._eager_set = {
            e.name: self._tool(e)
            for name, listed in self._entries.items()
            if eager.get(name)
            for e in listed
        }

    def _cost(self, server: str, count_text: Callable[[str], int]) -> int:
        if server not in self._tokens:
            schemas = [brim_tool(e, self.call).schema() for e in self._entries[server]]
            tokens = count_text(json.dumps(schemas, ensure_ascii=False)) if schemas else 0
            self._tokens[server] = tokens
        return self._tokens[server]

    @property
    def costs(self) -> tuple[ServerCost, ...]:
        """Each server whose listing is known: its tools, their cost, where they went."""
        count = self._count_text
        if count is None:
            return ()
        chosen = self._eager or {}
        return tuple(
            ServerCost(
                s.name,
                len(self._entries[s.name]),
                self._cost(s.name, count),
                bool(chosen.get(s.name)),
            )
            for s in self.servers
            if s.name in self._entries
        )

    def _eager_tools(self) -> dict[str, Tool]:
        return self._eager_set

    def _tool(self, entry: McpEntry) -> Tool:
        return brim_tool(entry, self.call)

    async def _deferred_entries(self) -> list[McpEntry]:
        """What `search_tools` searches: the deferred servers' tools, starting those whose
        listing is not known (a server that failed before is tried again)."""
        chosen = self._eager or {}
        deferred = [s for s in self.servers if not chosen.get(s.name)]
        await asyncio.gather(*(self._start(s) for s in deferred if s.name not in self._entries))
        return [e for s in deferred for e in self._entries.get(s.name, [])]

    # -- calls ---------------------------------------------------------------------------

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        connection = self._connections[server]
        fresh = not connection.running
        try:
            result = await connection.call(tool, args)
        except McpFault as fault:
            self._fault(fault)
            raise ToolError(
                f"{fault} ({fault.kind}); the conversation goes on without it"
            ) from None
        if fresh:  # started by this call: its listing is the one to keep
            self._learn(connection.server, connection.listed, keep=True)
        return result

    def report(self, count_tools: Callable[[list[Any]], int], schemas: list[Any]) -> McpToolsReport:
        """What `/context` says: the always-on tools block (`schemas`, as the loop sends
        it), each server's tier and cost, and the deferred schemas loaded so far."""
        rows = tuple(
            McpServerRow(c.server, c.tools, c.tokens, "eager" if c.eager else "deferred")
            for c in self.costs
        )
        joined = set(self.joining.joined)
        loaded = tuple(
            (name, count_tools([tool.schema()]))
            for name, tool in self.deferred.loaded.items()
            if name not in joined
        )
        return McpToolsReport(
            len(schemas), count_tools(schemas), rows, loaded, tuple(self.joining.joined)
        )

    def _fault(self, fault: McpFault) -> None:
        if self._emit is not None:
            data = {"server": fault.server, "fault": fault.kind, "tool": fault.tool}
            self._emit(ErrorEvent(fault.event_kind, str(fault), data=data, retryable=True))
