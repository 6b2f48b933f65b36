"""The `[[mcp]]` tables of an agent file: which MCP servers the agent may use.

One table per server: a stdio server is a `command` (an array: the program and its
arguments) with an optional `env`; a streamable-HTTP server is a `url`. `approve` says
whether its tools that may change things ask first (`ask`, the default) or not (`auto`);
`tier` says whether its schemas wait behind `search_tools` (`deferred`, the default, decided
from their cost) or always go out (`always`).

Parsing refuses a bad entry with a message naming it (`mcp[2] (git): …`), as a ValueError
a field turns into its refusal (engine/config/field_spec.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

Approve = Literal["ask", "auto"]
Tier = Literal["deferred", "always"]
APPROVE_CHOICES: tuple[str, ...] = ("ask", "auto")
TIER_CHOICES: tuple[str, ...] = ("deferred", "always")
DEFAULT_CALL_TIMEOUT_S = 60.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYS = ("name", "command", "url", "env", "approve", "tier", "timeout_s")


@dataclass(frozen=True)
class McpServer:
    """One configured MCP server (hashable, so an AgentConfig stays comparable)."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    approve: Approve = "ask"
    tier: Tier = "deferred"
    timeout_s: float = DEFAULT_CALL_TIMEOUT_S

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url is not None else "stdio"

    def table(self) -> dict[str, Any]:
        """The server as its TOML table (defaults left out)."""
        out: dict[str, Any] = {"name": self.name}
        if self.command:
            out["command"] = list(self.command)
        if self.url is not None:
            out["url"] = self.url
        if self.env:
            out["env"] = dict(self.env)
        if self.approve != "ask":
            out["approve"] = self.approve
        if self.tier != "deferred":
            out["tier"] = self.tier
        if self.timeout_s != DEFAULT_CALL_TIMEOUT_S:
            out["timeout_s"] = self.timeout_s
        return out


class McpEntryProblem(ValueError):
    """A `[[mcp]]` entry Brim cannot use, with which one and why."""


def parse_servers(raw: Any) -> tuple[McpServer, ...]:
    """Every `[[mcp]]` table as an `McpServer`, or `McpEntryProblem` for the first bad one."""
    if isinstance(raw, tuple) and all(isinstance(s, McpServer) for s in raw):
        servers = raw
    else:
        if not isinstance(raw, list | tuple):
            raise McpEntryProblem("must be an array of tables ([[mcp]] with name and command)")
        servers = tuple(_server(i, entry) for i, entry in enumerate(raw, 1))
    seen: set[str] = set()
    for i, server in enumerate(servers, 1):
        if server.name in seen:
            raise McpEntryProblem(f"mcp[{i}] ({server.name}): a second server of that name")
        seen.add(server.name)
    return tuple(servers)


def _server(index: int, entry: Any) -> McpServer:
    where = f"mcp[{index}]"
    if isinstance(entry, McpServer):
        return entry
    if not isinstance(entry, Mapping):
        raise McpEntryProblem(f"{where}: must be a table with name and command (or url)")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or "__" in name:
        raise McpEntryProblem(
            f"{where}: name must be 1 to 40 letters, digits, - or _ (no '__', which "
            f"separates server and tool), got {name!r}"
        )
    where = f"{where} ({name})"
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise McpEntryProblem(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    command, url = entry.get("command"), entry.get("url")
    if command is None and url is None:
        raise McpEntryProblem(f"{where}: needs a command (a stdio server) or a url (HTTP)")
    if command is not None and url is not None:
        raise McpEntryProblem(f"{where}: set command or url, not both")
    return McpServer(
        name=name,
        command=_command(where, command) if command is not None else (),
        url=_url(where, url) if url is not None else None,
        env=_env(where, entry.get("env", {})),
        approve=_choice(where, "approve", entry.get("approve", "ask"), APPROVE_CHOICES),  # type: ignore[arg-type]
        tier=_choice(where, "tier", entry.get("tier", "deferred"), TIER_CHOICES),  # type: ignore[arg-type]
        timeout_s=_timeout(where, entry.get("timeout_s", DEFAULT_CALL_TIMEOUT_S)),
    )


def _command(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list | tuple)
        or not value
        or not all(isinstance(p, str) and p and "\0" not in p for p in value)
    ):
        raise McpEntryProblem(
            f"{where}: command must be an array of strings, the program first "
            '(command = ["mcp-server-git", "--repository", "~/src"])'
        )
    return tuple(value)


def _url(where: str, value: Any) -> str:
    try:
        parts = urlsplit(value) if isinstance(value, str) else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpEntryProblem(f"{where}: url must be an http:// or https:// URL, got {value!r}")
    return str(value).strip()


def _env(where: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and _ENV_NAME.fullmatch(k) and isinstance(v, str)
        for k, v in value.items()
    ):
        raise McpEntryProblem(f'{where}: env must be a table of strings (env = {{ A = "b" }})')
    return tuple(sorted(value.items()))


def _choice(where: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise McpEntryProblem(f"{where}: {key} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _timeout(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.1 <= value <= 3600:
        raise McpEntryProblem(f"{where}: timeout_s must be a number of seconds from 0.1 to 3600")
    return float(value)
