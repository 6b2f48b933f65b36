"""The always-on request's tool schemas with two MCP servers: deferred against eager.

Brim's nine built-in tools plus the registry's `mcp-server-time` and `mcp-server-git`
(started for real over stdio): with the deferred tier the request carries the nine and the
`search_tools`/`call_tool` pair; with every schema eager (what the desktop peers do) it
carries all of them. Counted with tiktoken's o200k encoding (the gpt-oss family's), as the
request's tools block, and set against a 4,096 and a 32,768-token window.

Then the KV cache across a `search_tools` load on the embedded engine (the bundled
SmolLM2, `MCP_KV=0` skips it): the engine's `cached_tokens` of the request after the load
against the prompt tokens of the one before it. Target: the whole previous request reused.
(SmolLM2's chat template renders no tools block, so on this model the schema inserted into
the tools block, as other loaders do, changes nothing either; that row needs a model whose
template carries tools, through llama-server.)

    python -m bench mcp_tools
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import brim_tool
from engine.mcp.hub import McpHub
from engine.messages import Message, ToolCall, assistant, system, tool_result, user
from engine.providers.base import ChatOptions, StreamDone
from engine.tokens import TokenCounter
from engine.tools import default_registry

WINDOWS = (4096, 32768)


def _servers(repo: Path) -> tuple[McpServer, ...]:
    bin_dir = Path(sys.executable).parent
    return (
        McpServer("time", command=(str(bin_dir / "mcp-server-time"), "--local-timezone", "UTC")),
        McpServer("git", command=(str(bin_dir / "mcp-server-git"), "--repository", str(repo))),
    )


async def _measure(repo: Path) -> list[dict[str, Any]]:
    counter = TokenCounter("gpt-oss:20b")
    hub = McpHub(_servers(repo))
    try:
        await hub.list_all()  # both servers started: their costs decide the tier
        await hub.prepare()
        deferred = default_registry()
        hub.attach(deferred, counter.count_text, window=WINDOWS[0])  # both servers defer here
        eager = default_registry()
        entries = [e for listed in hub._entries.values() for e in listed]
        for entry in entries:
            eager.register(brim_tool(entry, hub.call))
        search = await hub.deferred.search("current time")
    finally:
        await hub.close()
    rows = _token_rows(counter, deferred, eager)
    if os.environ.get("MCP_KV", "1") != "0":
        rows += await _kv_rows(deferred, search)
    return rows


def _token_rows(counter: TokenCounter, deferred: Any, eager: Any) -> list[dict[str, Any]]:
    rows = []
    for label, registry in (("deferred (Brim)", deferred), ("all schemas eager", eager)):
        tokens = counter.count_tools(registry.schemas())
        row: dict[str, Any] = {"tools block": label, "tools": len(registry), "tokens": tokens}
        for window in WINDOWS:
            row[f"% of {window}"] = round(100 * tokens / window, 1)
        rows.append(row)
    rows.append(
        {
            "tools block": "saved by deferral",
            "tools": len(eager) - len(deferred),
            "tokens": rows[1]["tokens"] - rows[0]["tokens"],
        }
    )
    return rows


async def _send(provider: Any, messages: list[Message], tools: list[Any]) -> tuple[int, int]:
    """(prompt tokens, cached tokens) of one request with a one-token answer."""
    usage = None
    async for item in provider.stream_chat("", messages, ChatOptions(max_tokens=1, tools=tools)):
        if isinstance(item, StreamDone):
            usage = item.usage
    assert usage is not None
    return usage.prompt_tokens or 0, usage.cached_tokens or 0


async def _kv_rows(registry: Any, search: str) -> list[dict[str, Any]]:
    from engine.providers.embedded import EmbeddedProvider

    call = ToolCall("c1", "search_tools", '{"query": "current time"}')
    before = [system(default_agent().system_prompt), user("What time is it in UTC?")]
    after = [*before, assistant("", (call,)), tool_result(call, search)]
    tools = registry.schemas()
    rows = []
    for label, tools_after in (("schema in the search result (Brim)", tools),):
        provider = EmbeddedProvider(n_ctx=8192)
        try:
            first, _ = await _send(provider, before, tools)
            second, cached = await _send(provider, after, tools_after)
        finally:
            await provider.aclose()
        rows.append(
            {
                "tools block": f"KV after a load: {label}",
                "request before": first,
                "request after": second,
                "reused": cached,
                "% of before reused": round(100 * cached / first, 1) if first else None,
            }
        )
    return rows


def main() -> list[dict[str, Any]]:
    if shutil.which("git") is None:
        raise SystemExit("mcp_tools needs git for mcp-server-git")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        return asyncio.run(_measure(repo))


if __name__ == "__main__":
    from bench import format_table

    print(format_table(main()))
