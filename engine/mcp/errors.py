"""What can go wrong with an MCP server, as data: which server, what kind, in words."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from engine.events import ErrorKind

FaultKind = Literal["start_failed", "exited", "timeout", "malformed", "call_failed"]

# The error events' kinds (engine/events.py ErrorEvent.kind), one per fault.
ERROR_KINDS: dict[FaultKind, ErrorKind] = {
    "start_failed": "mcp_start_failed",
    "exited": "mcp_server_exited",
    "timeout": "mcp_timeout",
    "malformed": "mcp_malformed_reply",
    "call_failed": "mcp_call_failed",
}


class McpFault(Exception):
    """A server that could not start, died, hung past its timeout or spoke no JSON-RPC."""

    def __init__(self, server: str, kind: FaultKind, detail: str, tool: str = "") -> None:
        self.server = server
        self.kind: FaultKind = kind
        self.detail = detail
        self.tool = tool
        super().__init__(f"MCP server {server!r}: {detail}")

    @property
    def event_kind(self) -> ErrorKind:
        return ERROR_KINDS[self.kind]
