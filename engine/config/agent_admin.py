"""Making, copying and removing agent files: what the window's New agent, Duplicate and
Delete do to the agents folder.

A new agent is a commented file (`render_agent`) under a name no other agent has; a copy keeps
the original file's comments and layout with only its name changed. A delete moves the file
into a trash folder beside the agents (`.trash`, which the loader never reads), so Undo puts
the very same file back; nothing is removed from the disk here.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.atomic import atomic_write_text
from engine.config.agent import AgentConfig, default_agent
from engine.config.agent_files import (
    AGENT_SUFFIX,
    agent_files,
    agent_path,
    load_agent,
    load_agents,
    render_agent,
    save_agent,
)
from engine.paths import BrimPaths

TRASH_DIR = ".trash"
NEW_AGENT_NAME = "New agent"


@dataclass(frozen=True)
class TrashedAgent:
    """An agent file moved aside by a delete: where it was and where it is now."""

    name: str
    original: Path
    trashed: Path


def agent_names(paths: BrimPaths) -> set[str]:
    """The names of the agents whose files load now."""
    configs, _ = load_agents(paths.agents_dir)
    return {c.name for c in configs}


def unused_name(base: str, taken: Iterable[str]) -> str:
    """`base`, or `base 2`, `base 3`… : the first no agent has."""
    used = {t.casefold() for t in taken}
    if base.casefold() not in used:
        return base
    n = 2
    while f"{base} {n}".casefold() in used:
        n += 1
    return f"{base} {n}"


def create_agent(
    paths: BrimPaths, like: AgentConfig | None = None, name: str = NEW_AGENT_NAME
) -> AgentConfig:
    """A new agent file with every setting listed: the engine and model of `like` (the agent
    open now) when given, the default agent's otherwise. Returns the agent as loaded."""
    chosen = unused_name(name, agent_names(paths))
    base = default_agent()
    if like is not None:
        base = base.with_changes(
            provider=like.provider,
            base_url=like.base_url,
            api_key_env=like.api_key_env,
            model=like.model,
        )
    config = base.with_changes(name=chosen)
    target = agent_path(paths, chosen)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, render_agent(config))
    return load_agent(target)


def duplicate_agent(paths: BrimPaths, original: AgentConfig) -> AgentConfig:
    """A copy of `original`'s file under a new name (`NAME copy`), its comments kept."""
    if original.source_path is None:
        raise ValueError("only an agent loaded from its file can be duplicated")
    chosen = unused_name(f"{original.name} copy", agent_names(paths))
    target = agent_path(paths, chosen)
    shutil.copyfile(original.source_path, target)
    copied = load_agent(target)
    return save_agent(target, copied.with_changes(name=chosen))


def trash_agent(paths: BrimPaths, config_path: Path, name: str = "") -> TrashedAgent:
    """Move an agent file into the trash folder (the sidebar's Delete; Undo restores it)."""
    source = Path(config_path)
    trash = paths.agents_dir / TRASH_DIR
    trash.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = trash / f"{source.stem}.{stamp}{AGENT_SUFFIX}"
    n = 2
    while target.exists():
        target = trash / f"{source.stem}.{stamp}-{n}{AGENT_SUFFIX}"
        n += 1
    os.replace(source, target)
    return TrashedAgent(name or source.stem, source, target)


def restore_agent(paths: BrimPaths, trashed: TrashedAgent) -> Path:
    """Put a trashed agent file back: at its old place, or beside it when that is taken."""
    target = trashed.original
    if target.exists():
        target = agent_path(paths, target.stem, agent_files(paths.agents_dir))
    os.replace(trashed.trashed, target)
    return target


def is_agent_file_change(rel: str) -> bool:
    """For the agents folder's watcher: an agent file itself (not the trash, a lock, a
    temporary file or a hidden file) was added, changed or removed."""
    return "/" not in rel and rel.endswith(AGENT_SUFFIX) and not rel.startswith(".")
