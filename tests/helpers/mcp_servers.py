"""Small MCP servers for tests, written with the SDK: `python -m tests.helpers.mcp_servers MODE`.

MODE `ok` serves `echo` (read-only) and `store` (changes things); `exit` dies before it
answers; `garbage` writes lines that are not JSON-RPC on stdout; `hang` serves an `echo`
that never returns; `die` serves an `echo` that kills its own process mid-call; `deaf` never reads
nor writes; `http PORT`
serves `ok`'s tools over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)


def _server(mode: str) -> MCPServer:
    server: MCPServer = MCPServer("brim-test")

    @server.tool(annotations=READ_ONLY, description="Say the text back, reversed.")
    def echo(text: str) -> str:
        if mode == "hang":
            time.sleep(3600)
        if mode == "die":
            os._exit(9)
        return text[::-1]

    @server.tool(description="Store a note (changes the server's state).")
    def store(note: str, count: int = 1) -> str:
        return f"stored {note!r} x{count}"

    return server


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else "ok"
    if mode == "exit":
        sys.stderr.write("boom: this server cannot start\n")
        sys.exit(3)
    if mode == "deaf":  # neither reads its stdin nor writes: only a signal ends it
        time.sleep(3600)
    if mode == "garbage":
        for _ in range(3):
            sys.stdout.write("this is not json-rpc\n")
        sys.stdout.flush()
        time.sleep(3600)
    if mode == "http":
        _server("ok").run("streamable-http", host="127.0.0.1", port=int(argv[1]))
        return
    _server(mode).run()


if __name__ == "__main__":
    main(sys.argv[1:])
