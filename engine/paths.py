"""Where Brim keeps its files, decided in one place.

Without an override every folder comes from platformdirs (appname "brim"), so Brim follows
each platform's conventions: configuration (agent files, settings) where the user expects to
edit it, data (the database, work folders, memory) in the data folder, logs in the log folder.

One override moves all of them under a single root: the `--data-dir` argument, else the
`BRIM_HOME` environment variable. Tests and second installs rely on that: nothing then reads
or writes the real home.

    ROOT/config/agents/*.toml      one file per agent
    ROOT/config/settings.json      app settings (last conversation, window geometry)
    ROOT/data/brim.sqlite3         conversations, messages, usage, receipts
    ROOT/data/work/AGENT/CONV/     journal.jsonl, state.json, tool-results/
    ROOT/data/memory/              memory entries (Markdown)
    ROOT/logs/
    ROOT/cache/

Folders are created lazily (`ensure()`), so resolving paths has no side effects.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import platformdirs

APP_NAME = "brim"
ENV_VAR = "BRIM_HOME"
DB_NAME = "brim.sqlite3"
SETTINGS_NAME = "settings.json"

# Characters kept as-is in a folder name built from an agent name or conversation id.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = frozenset({"", ".", ".."})


def safe_component(name: str) -> str:
    """A single, portable folder name for `name` (agent names may hold spaces or slashes).

    Distinct names that sanitize alike stay distinct: a short hash of the original is added
    whenever anything had to change.
    """
    cleaned = _UNSAFE.sub("_", name).strip("._")[:80]
    if cleaned == name and name not in _RESERVED:
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{cleaned or 'x'}-{digest}"


@dataclass(frozen=True)
class BrimPaths:
    root: Path  # the override root, or the platform data folder
    config_dir: Path
    agents_dir: Path
    settings_path: Path
    data_dir: Path
    db_path: Path
    work_dir: Path
    memory_dir: Path
    logs_dir: Path
    cache_dir: Path
    overridden: bool = False  # True when --data-dir or BRIM_HOME chose the root

    @classmethod
    def resolve(
        cls, data_dir: Path | str | None = None, env: Mapping[str, str] | None = None
    ) -> BrimPaths:
        """The paths for this run: `data_dir` (from `--data-dir`) wins, then `BRIM_HOME`,
        then the platform folders. `env` defaults to the process environment."""
        environ = os.environ if env is None else env
        override: Path | str | None = data_dir
        if override is None or str(override) == "":
            override = environ.get(ENV_VAR) or None
        if override is not None:
            return cls.under(Path(override))
        config = platformdirs.user_config_path(APP_NAME, appauthor=False)
        data = platformdirs.user_data_path(APP_NAME, appauthor=False)
        return cls._build(
            root=data,
            config=config,
            data=data,
            logs=platformdirs.user_log_path(APP_NAME, appauthor=False),
            cache=platformdirs.user_cache_path(APP_NAME, appauthor=False),
            overridden=False,
        )

    @classmethod
    def under(cls, root: Path | str) -> BrimPaths:
        """Every path below one root folder (what the override does)."""
        base = Path(root).expanduser().resolve()
        return cls._build(
            root=base,
            config=base / "config",
            data=base / "data",
            logs=base / "logs",
            cache=base / "cache",
            overridden=True,
        )

    @classmethod
    def _build(
        cls, *, root: Path, config: Path, data: Path, logs: Path, cache: Path, overridden: bool
    ) -> BrimPaths:
        return cls(
            root=root,
            config_dir=config,
            agents_dir=config / "agents",
            settings_path=config / SETTINGS_NAME,
            data_dir=data,
            db_path=data / DB_NAME,
            work_dir=data / "work",
            memory_dir=data / "memory",
            logs_dir=logs,
            cache_dir=cache,
            overridden=overridden,
        )

    def ensure(self) -> BrimPaths:
        """Create every folder (not the files) and return self, for chaining."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, Path) or f.name in {"db_path", "settings_path"}:
                continue
            value.mkdir(parents=True, exist_ok=True)
        return self

    def conversation_dir(self, agent: str, conversation_id: str) -> Path:
        """The work folder of one conversation: journal.jsonl, state.json, tool-results/.

        Not created here; callers that write create it (`mkdir(parents=True)`)."""
        return self.work_dir / safe_component(agent) / safe_component(conversation_id)

    @property
    def mcp_listings_dir(self) -> Path:
        """Where the tool list each MCP server gave last is kept (engine/mcp/listing_cache.py)."""
        return self.cache_dir / "mcp"

    @property
    def open_dir(self) -> Path:
        """Where a session marks the conversation it has open (engine/conversation_claim.py)."""
        return self.data_dir / "open"

    def tool_results_dir(self, agent: str, conversation_id: str) -> Path:
        return self.conversation_dir(agent, conversation_id) / "tool-results"
