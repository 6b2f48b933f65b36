"""Testing one MCP server from the agent editor: start it, list its tools with what each
schema costs in tokens, stop it; or say what went wrong, by kind.

The costs are counted as the agent's engine counts them where it can (the counter a session
on that engine would use, engine/tokens/counter.py), and the test says how it counted. A
successful listing is kept (engine/mcp/listing_cache.py), as a conversation's start keeps
it: the next conversation knows the server's tools without starting it."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import brim_tool, entries
from engine.mcp.connection import McpConnection
from engine.mcp.errors import McpFault
from engine.mcp.listing_cache import ListingCache
from engine.tokens import TokenCounter

# The engine counts each schema over HTTP on some engines: past this, the rest is estimated
# (an engine that hangs must not hold the editor's Test).
COUNT_DEADLINE_S = 10.0


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
    counting: str = ""  # how the costs were counted (TokenCounter.describe)
    kept: bool = False  # the listing was written where conversations read it

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.tools)

    @property
    def schemas_unseen(self) -> bool:
        """The engine counted every schema as nothing: the model's chat template leaves the
        tools block out, so the model would never see these tools."""
        return bool(self.tools) and self.tokens == 0


async def check_mcp_server(
    server: McpServer,
    counter: TokenCounter | None = None,
    listings: ListingCache | None = None,
) -> ServerTest:
    """Start `server`, list its tools with their schema costs by `counter` (o200k when
    none is given), keep the listing in `listings`, stop it."""
    count = counter or TokenCounter()
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
    exact = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + COUNT_DEADLINE_S
    for entry in entries(server, listed):
        schema = brim_tool(entry, unused).schema()  # type: ignore[arg-type]
        left = deadline - loop.time()
        if left > 0:
            # An engine that counts over HTTP is asked once per schema.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(count.prime([], [schema]), left)
        exact = exact and count.counted_exactly([schema])
        costs.append(ToolCost(entry.name, count.count_tools([schema]), entry.read_only))
    counting = count.describe()
    if costs and not exact and count.estimate_is_exact:  # it claims exact: it was not asked
        counting = "estimated: the engine did not count these schemas (it did not answer)"
    # Unchanged since the last start (False from write) is kept as well.
    kept = listings is not None and (
        listings.write(server, list(listed)) or listings.read(server) is not None
    )
    return ServerTest(server.name, tuple(costs), counting=counting, kept=kept)


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
