"""The tool list a server gave last, kept so that a conversation need not start it to know.

Servers start at first use (engine/mcp/hub.py), but `search_tools` and the choice of the
eager servers need the tool list before that. The last successful listing of a server is
kept in Brim's cache folder (`mcp/NAME-KEY.json`), keyed by what starts the server and
shapes its answer: its command or URL and its environment. Another command line is another
key, so an edited table never reads an old list. A listing can still go stale (the
server's package was upgraded): it is rewritten each time the server starts and lists
something else, and a call of a tool the server no longer has gets the server's own error.

A file that cannot be read or parsed is no listing (the server is started instead); a
write that fails is skipped: the cache only ever saves a start.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import mcp_types as types

from engine.atomic import atomic_write_text
from engine.config.mcp_servers import McpServer
from engine.paths import safe_component

log = logging.getLogger(__name__)

FORMAT = 1


def listing_key(server: McpServer) -> str:
    """What a listing depends on: the command or URL and the environment (not the name,
    the approval rule, the tier or the timeout: the server lists the same tools)."""
    basis = {"command": list(server.command), "url": server.url, "env": sorted(server.env)}
    raw = json.dumps(basis, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:16]


class ListingCache:
    """Last listings, one file per server and key, under `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, server: McpServer) -> Path:
        return self.folder / f"{safe_component(server.name)}-{listing_key(server)}.json"

    def read(self, server: McpServer) -> list[types.Tool] | None:
        """The server's last listing, or None when there is none Brim can use."""
        try:
            data = json.loads(self.path(server).read_text(encoding="utf-8"))
            if data.get("format") != FORMAT or data.get("key") != listing_key(server):
                return None
            return [types.Tool.model_validate(t) for t in data["tools"]]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # pydantic's too
            log.info("the MCP listing of %s in %s is unreadable", server.name, self.folder)
            return None

    def write(self, server: McpServer, tools: list[types.Tool]) -> bool:
        """Keep `tools` as the server's listing; True when the file changed."""
        data = {
            "format": FORMAT,
            "key": listing_key(server),
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
        }
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)
        path = self.path(server)
        try:
            if path.exists() and path.read_text(encoding="utf-8") == text:
                return False
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
        except OSError:
            log.info("cannot keep the MCP listing of %s in %s", server.name, self.folder)
            return False
        return True
