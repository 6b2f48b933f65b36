"""A server's tools as Brim tools: named `server__tool`, approved and shaped like Brim's own.

`McpEntry` is one tool as the server listed it; `brim_tool` makes the `Tool` the registry
runs, so a result is cut, stored for `retrieve_tool_result`, redacted and counted per tool
by the same code as every built-in result (engine/tools/registry.py). A tool that may
change things asks through the same approver as `write_file` and `run_command`, unless the
server's table says `approve = "auto"` or the tool declares `readOnlyHint`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from engine.config.mcp_servers import McpServer
from engine.tools.approval import ApprovalRequest
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError
from engine.tools.registry import Tool

SEPARATOR = "__"
DESCRIPTION_CHARS = 1_000  # a server's description beyond this is cut (it is the server's)

# How a tool is run: server, tool, arguments -> the SDK's result.
CallFn = Callable[[str, str, dict[str, Any]], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class McpEntry:
    server: McpServer
    tool: str  # the server's own name for it
    description: str
    parameters: dict[str, Any]
    read_only: bool

    @property
    def name(self) -> str:
        return f"{self.server.name}{SEPARATOR}{self.tool}"

    @property
    def needs_approval(self) -> bool:
        return self.server.approve == "ask" and not self.read_only

    def line(self) -> str:
        """One line for a `search_tools` result."""
        first = (self.description.strip().splitlines() or [""])[0]
        return f"{self.name}: {first[:160]}"


def entries(server: McpServer, tools: list[types.Tool]) -> list[McpEntry]:
    """The server's tools, sorted by name (so their schemas come out in one order)."""
    out = []
    for tool in sorted(tools, key=lambda t: t.name):
        schema = dict(tool.input_schema or {"type": "object", "properties": {}})
        schema.pop("title", None)  # the SDK's "xArguments" titles tell a model nothing
        hints = tool.annotations
        out.append(
            McpEntry(
                server=server,
                tool=tool.name,
                description=(tool.description or tool.title or tool.name)[:DESCRIPTION_CHARS],
                parameters=schema,
                read_only=bool(hints is not None and hints.read_only_hint),
            )
        )
    return out


def result_text(result: types.CallToolResult) -> str:
    """What the model reads of a result: its text parts, other parts named."""
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            parts.append(item.text)
        else:
            kind = getattr(item, "type", "content")
            mime = getattr(item, "mime_type", "") or ""
            parts.append(f"[{kind}{' ' + mime if mime else ''} not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def brim_tool(entry: McpEntry, call: CallFn) -> Tool:
    """The registry's tool for `entry`: approval first where it is due, then the call."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        if entry.needs_approval:
            shown = json.dumps(args, ensure_ascii=False, indent=1)
            await ctx.require_approval(
                ApprovalRequest(
                    tool=entry.name,
                    summary=f"Run {entry.tool} on the MCP server {entry.server.name}",
                    detail=f"{entry.name}({shown})",
                    always_key=f"mcp:{entry.name}",
                    always_label=f"every {entry.name} call in this conversation",
                )
            )
        result = await call(entry.server.name, entry.tool, args)
        text = result_text(result)
        if result.is_error:
            raise ToolError(f"{entry.name} failed: {text}")
        return text

    return Tool(
        name=entry.name,
        description=entry.description,
        parameters=entry.parameters,
        handler=handler,
        needs_approval=entry.needs_approval,
    )
