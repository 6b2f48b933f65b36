"""The deferred tier: two always-on tools that keep MCP schemas out of the request.

`search_tools(query)` answers with the matching tools, one line each, and the schema of the
best match, which is now loaded: the schema sits in the result, after everything the engine
has cached, so the request before the load is a byte-prefix of the request after it.
`call_tool(name, arguments)` runs a loaded tool (or an eager one), its arguments checked
against the loaded schema by the registry's own rules. The tools block itself never changes
within a conversation, so a loaded schema is byte-identical in every later request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from engine.mcp.catalog import McpEntry
from engine.tools.context import ToolContext
from engine.tools.errors import ToolArgumentError
from engine.tools.registry import Tool, check_arguments, parse_arguments

SEARCH_NAME = "search_tools"
CALL_NAME = "call_tool"
MAX_MATCHES = 8
_WORD = re.compile(r"[a-z0-9]+")


class DeferredTools:
    """The deferred tools of one conversation and which of them are loaded.

    `catalog` gives every deferred entry (starting servers on first use); `tool_for` the
    registry tool that runs an entry."""

    def __init__(
        self,
        catalog: Callable[[], Awaitable[list[McpEntry]]],
        tool_for: Callable[[McpEntry], Tool],
        eager: Callable[[], dict[str, Tool]],
    ) -> None:
        self._catalog = catalog
        self._tool_for = tool_for
        self._eager = eager
        self.loaded: dict[str, Tool] = {}
        # Hooks of engine/mcp/joining.py: a load, a call_tool its schema refused, one that ran.
        self.on_load: Callable[[str], None] | None = None
        self.on_miss: Callable[[str], None] | None = None
        self.on_call: Callable[[str], None] | None = None
        self.direct = False  # loaded tools join the tools block (the fallback)

    def tools(self) -> list[Tool]:
        return [self._search_tool(), self._call_tool()]

    async def search(self, query: str) -> str:
        entries = await self._catalog()
        if not entries:
            return "No MCP tools are available (no server started; see the errors above)."
        ranked = _rank(query, entries)
        if not ranked:
            names = ", ".join(e.name for e in entries[:20])
            return f"No tool matches {query!r}. The deferred tools are: {names}."
        best = ranked[0]
        tool = self.loaded.get(best.name) or self._tool_for(best)
        self.loaded[best.name] = tool
        if self.on_load is not None:
            self.on_load(best.name)
        lines = [e.line() for e in ranked[:MAX_MATCHES]]
        schema = json.dumps(tool.schema()["function"], ensure_ascii=False, sort_keys=True)
        how = (
            f"it is in your tools now: call {best.name} directly"
            if self.direct
            else f"call it with {CALL_NAME}(name, arguments)"
        )
        return "\n".join(lines) + f"\n\nLoaded {best.name}; {how}. Its schema:\n" + schema

    async def call(self, name: str, arguments: Any, ctx: ToolContext) -> str:
        tool = self.loaded.get(name) or self._eager().get(name)
        if tool is None:
            raise ToolArgumentError(
                f"{name!r} is not loaded: find it with {SEARCH_NAME} first (it loads the "
                "best match and shows its schema)"
            )
        try:
            args = check_arguments(tool, parse_arguments(arguments))
        except ToolArgumentError:
            if self.on_miss is not None and name in self.loaded:
                self.on_miss(name)
            raise
        if self.on_call is not None:
            self.on_call(name)
        text = await tool.handler(args, ctx)
        ctx.metrics.record(name, len(text))  # counted per MCP tool, beside call_tool
        return text

    def _search_tool(self) -> Tool:
        async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
            return await self.search(args["query"])

        return Tool(
            name=SEARCH_NAME,
            description=(
                "Find tools of the connected MCP servers by what they do. Returns matching "
                "tools, one line each, and loads the best match: its schema is in the "
                f"result; run it with {CALL_NAME}."
            ),
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What the tool does"}},
                "required": ["query"],
            },
            handler=handler,
        )

    def _call_tool(self) -> Tool:
        async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
            return await self.call(args["name"], args.get("arguments"), ctx)

        return Tool(
            name=CALL_NAME,
            description=(
                f"Run an MCP tool that {SEARCH_NAME} loaded, with arguments that follow its schema."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "server__tool, as loaded"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name"],
            },
            handler=handler,
        )


def _rank(query: str, entries: list[McpEntry]) -> list[McpEntry]:
    """Entries that share a word with `query` (an exact name first), most words first."""
    text = query.strip().lower()
    words = set(_WORD.findall(text))
    scored: list[tuple[int, str, McpEntry]] = []
    for entry in entries:
        if text in (entry.name.lower(), entry.tool.lower()):
            scored.append((1000, entry.name, entry))
            continue
        hay = set(_WORD.findall(f"{entry.name} {entry.description}".lower().replace("_", " ")))
        hay |= set(_WORD.findall(entry.name.lower()))
        score = len(words & hay)
        if score:
            scored.append((score, entry.name, entry))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [entry for _, _, entry in scored]
