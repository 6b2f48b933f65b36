"""What `/context` says of MCP tools: the always-on schemas, each server's tier and cost,
the deferred schemas loaded so far, and what the deferral saves per request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class McpServerRow:
    server: str
    tools: int
    tokens: int  # its schemas, counted as the tools block would carry them
    tier: str  # "eager" (in the tools block) | "deferred" (behind search_tools)


@dataclass(frozen=True)
class McpToolsReport:
    always_on_tools: int
    always_on_tokens: int  # the whole tools block, built-in tools included
    servers: tuple[McpServerRow, ...] = ()
    loaded: tuple[tuple[str, int], ...] = ()  # (server__tool, tokens): in search results
    joined: tuple[str, ...] = ()  # loaded tools a compaction (or the fallback) put in the block

    @property
    def saved_tokens(self) -> int:
        """Deferred schemas not sent in every request (a loaded one is sent once)."""
        return sum(r.tokens for r in self.servers if r.tier == "deferred")

    def lines(self) -> list[str]:
        out = [
            f"MCP: always-on tool schemas {self.always_on_tokens:,} tokens "
            f"({self.always_on_tools} tools); deferral saves {self.saved_tokens:,} per request"
        ]
        out.extend(
            f"  {r.server}: {r.tier}, {r.tools} tools, {r.tokens:,} tokens" for r in self.servers
        )
        out.extend(f"  loaded: {name} ({tokens:,} tokens)" for name, tokens in self.loaded)
        out.extend(f"  joined the tools block: {name}" for name in self.joined)
        return out
