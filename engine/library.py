"""The agents and their saved conversations, as the sidebar lists them.

A broken agent file is listed with what is wrong in it and never stops the others from
loading; conversations whose agent file is gone are still listed under that name, so nothing
saved disappears because a file was renamed. A first start (an empty data folder) writes the
default agent and says so. Deleting is soft: `restore` undoes it until the store purges it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, ensure_default_agent, load_agents
from engine.config.settings import load_settings, update_settings
from engine.conversation_claim import open_elsewhere
from engine.paths import BrimPaths
from engine.store import Store
from engine.store.records import ConversationInfo

# Settings keys the desktop remembers between runs.
LAST_AGENT = "last_agent"
LAST_CONVERSATION = "last_conversation"
WORKSPACE = "workspace"


@dataclass(frozen=True)
class AgentEntry:
    """One agent in the sidebar: usable (`config`) or broken (`error` says why)."""

    name: str
    config: AgentConfig | None = None
    error: str | None = None  # every problem, each naming the file
    path: Path | None = None
    problem: str | None = None  # the first problem without the file's path, for a short line

    @property
    def usable(self) -> bool:
        return self.config is not None


@dataclass(frozen=True)
class Listing:
    agents: tuple[AgentEntry, ...]
    conversations: dict[str, tuple[ConversationInfo, ...]] = field(default_factory=dict)
    created_default: Path | None = None  # a first start wrote the default agent here
    problems: tuple[str, ...] = ()  # one line per broken agent file, for the banner

    def agent(self, name: str) -> AgentEntry | None:
        return next((a for a in self.agents if a.name == name), None)


@dataclass(frozen=True)
class Choice:
    """What the window opens on start: an agent and, when resuming, a conversation."""

    agent: AgentConfig
    conversation_id: str | None = None
    # The last conversation, passed over because another Brim process has it open.
    skipped_open_elsewhere: str | None = None


def _shown(info: ConversationInfo, keep: str | None) -> bool:
    """An untitled conversation holding only its system prompt was never used: hidden,
    unless it is the one open now."""
    return info.id == keep or bool(info.title) or info.message_count > 1


class Library:
    """Opened on the engine thread; every call is short (one file read or one query)."""

    def __init__(self, paths: BrimPaths) -> None:
        self.paths = paths
        self._store: Store | None = None
        self._created_default: Path | None = None
        self.recovered_from: Path | None = None  # where a damaged database was moved aside

    def open(self) -> None:
        """A damaged database is moved aside (never deleted) and a new one started, so the
        window opens and says where the old one went; a locked or too-new one raises."""
        paths = self.paths.ensure()
        self._created_default = ensure_default_agent(paths)
        self._store = Store.open(paths.db_path, recover=True)
        self.recovered_from = self._store.recovered_from

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the library is not open")
        return self._store

    # -- reading ---------------------------------------------------------------------------

    def listing(self, keep: str | None = None) -> Listing:
        configs, errors = load_agents(self.paths.agents_dir)
        agents = [AgentEntry(c.name, c, None, c.source_path) for c in configs]
        broken = [
            AgentEntry(
                e.path.name if e.path else e.source,
                None,
                str(e),
                e.path,
                e.problems[0].render("").lstrip(": "),
            )
            for e in errors
        ]
        by_agent: dict[str, list[ConversationInfo]] = {}
        for info in self.store.list_conversations():
            if _shown(info, keep):
                by_agent.setdefault(info.agent, []).append(info)
        known = {a.name for a in agents}
        orphans = [
            AgentEntry(
                name,
                None,
                f"no agent file named '{name}' any more",
                problem=f"no agent file named '{name}' any more",
            )
            for name in sorted(by_agent)
            if name not in known
        ]
        return Listing(
            agents=tuple(agents + orphans + broken),
            conversations={name: tuple(rows) for name, rows in by_agent.items()},
            created_default=self._created_default,
            problems=tuple(str(e).splitlines()[0] for e in errors),
        )

    def conversation(self, conversation_id: str) -> ConversationInfo | None:
        return self.store.get_conversation(conversation_id)

    def choose(self, settings: dict[str, Any] | None = None) -> Choice | None:
        """The last conversation when it and its agent still exist; else a new one with the
        last agent, the default agent or the first usable one; None when no agent loads.
        When another Brim process has the last conversation open, a new one with its agent."""
        settings = self.settings() if settings is None else settings
        configs, _ = load_agents(self.paths.agents_dir)
        by_name = {c.name: c for c in configs}
        last = settings.get(LAST_CONVERSATION)
        if isinstance(last, str) and last:
            info = self.store.get_conversation(last)
            if info is not None and info.agent in by_name:
                if not open_elsewhere(self.paths.open_dir, info.id):
                    return Choice(by_name[info.agent], info.id)
                # A second window: a new conversation with the same agent, not a refusal.
                return Choice(by_name[info.agent], skipped_open_elsewhere=info.id)
        for name in (settings.get(LAST_AGENT), "default"):
            if isinstance(name, str) and name in by_name:
                return Choice(by_name[name])
        return Choice(configs[0]) if configs else None

    def workspace_for(
        self, conversation_id: str | None, settings: dict[str, Any] | None = None
    ) -> Path | None:
        """A resumed conversation keeps the folder it was started in; a new one gets the
        folder chosen in the settings, when it still exists."""
        if conversation_id:
            info = self.store.get_conversation(conversation_id)
            if info is not None:
                return Path(info.workspace) if info.workspace else None
        settings = self.settings() if settings is None else settings
        chosen = settings.get(WORKSPACE)
        if isinstance(chosen, str) and chosen and Path(chosen).is_dir():
            return Path(chosen)
        return None

    # -- changing --------------------------------------------------------------------------

    def rename(self, conversation_id: str, title: str) -> None:
        self.store.rename_conversation(conversation_id, title.strip())

    def delete(self, conversation_id: str) -> None:
        self.store.delete_conversation(conversation_id)

    def restore(self, conversation_id: str) -> None:
        self.store.restore_conversation(conversation_id)

    # -- settings --------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        return load_settings(self.paths.settings_path)

    def save_settings(self, **changes: Any) -> dict[str, Any]:
        return update_settings(self.paths.settings_path, **changes)
