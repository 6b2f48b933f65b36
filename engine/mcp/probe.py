"""Testing one MCP server from the agent editor: start it, list its tools with what each
schema costs in tokens, stop it; or say what went wrong, by kind."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import brim_tool, entries
from engine.mcp.connection import McpConnection
from engine.mcp.errors import McpFault
from engine.tokens import TokenCounter


@dataclass(frozen=True)
class ToolCost:
    name: str  # server__tool
    tokens: int  # its schema, as the tools block would carry it
    read_only: bool


@dataclass(frozen=True)
class ServerTest:
    server: str
    tools: tuple[ToolCost, ...] = ()
    fault: str = ""  # "" when it answered; else the fault's kind (engine/mcp/errors.py)
    error: str = ""

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.tools)


async def check_mcp_server(
    server: McpServer, count_text: Callable[[str], int] | None = None
) -> ServerTest:
    """Start `server`, list its tools with their schema costs, stop it."""
    count = count_text or TokenCounter().count_text
    connection = McpConnection(server)
    try:
        listed = await connection.start()
    except McpFault as fault:
        return ServerTest(server.name, fault=fault.kind, error=str(fault))
    finally:
        await connection.stop()

    async def unused(*_: object) -> object:  # the schemas only; nothing is called
        raise AssertionError

    costs = []
    for entry in entries(server, listed):
        schema = brim_tool(entry, unused).schema()  # type: ignore[arg-type]
        costs.append(
            ToolCost(entry.name, count(json.dumps(schema, ensure_ascii=False)), entry.read_only)
        )
    return ServerTest(server.name, tuple(costs))


def tool_calling_warnings(
    servers: tuple[McpServer, ...], tool_calls: bool | None
) -> tuple[str, ...]:
    """What the agent probe says of the agent's MCP servers on an engine that reports the
    model cannot call tools (`tool_calls` False): none is offered, deferred or eager. An
    engine that does not say (None) keeps them: a model that then misses `call_tool` gets
    the loaded tools in its tools block instead (engine/mcp/joining.py)."""
    if not servers or tool_calls is not False:
        return ()
    names = ", ".join(s.name for s in servers)
    count = len(servers)
    return (
        f"The engine reports that this model cannot call tools, so its {count} MCP "
        f"server{'s' if count != 1 else ''} ({names}) {'are' if count != 1 else 'is'} not "
        "offered: neither search_tools nor their tools go out. Pick a model that calls "
        "tools to use them.",
    )
