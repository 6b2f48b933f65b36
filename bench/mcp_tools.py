"""The always-on request's tool schemas with two MCP servers: deferred against eager.

Brim's nine built-in tools plus the registry's `mcp-server-time` and `mcp-server-git`
(started for real over stdio): with the deferred tier the request carries the nine and the
`search_tools`/`call_tool` pair; with every schema eager (what the desktop peers do) it
carries all of them. Counted with tiktoken's o200k encoding (the gpt-oss family's), as the
request's tools block, and set against a 4,096 and a 32,768-token window.

    python -m bench mcp_tools
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import brim_tool
from engine.mcp.hub import McpHub
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
        await hub.prepare()
        deferred = default_registry()
        hub.attach(deferred, counter.count_text, window=WINDOWS[0])  # both servers defer here
        eager = default_registry()
        entries = [e for listed in hub._entries.values() for e in listed]
        for entry in entries:
            eager.register(brim_tool(entry, hub.call))
    finally:
        await hub.close()
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
