"""One memory root's parts together: what the session, the tools and the CLI hold."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.memory.errors import UnknownEntry
from engine.memory.layout import MemoryLayout, Scope
from engine.memory.queue import Decision, Suggestion, SuggestionQueue
from engine.memory.receipts import Receipts, explain_records
from engine.memory.store import MemoryStore
from engine.paths import BrimPaths


@dataclass(frozen=True)
class Explanation:
    path: str
    entry_id: str
    kind: str
    origin: str
    hash: str
    records: list[dict[str, Any]]


class MemoryService:
    def __init__(self, root: Path) -> None:
        self.layout = MemoryLayout(Path(root))
        self.store = MemoryStore(self.layout)
        self.queue = SuggestionQueue(self.layout, self.store)
        self.receipts = Receipts(self.layout, self.store)

    @classmethod
    def for_paths(cls, paths: BrimPaths) -> MemoryService:
        return cls(paths.memory_dir)

    @property
    def root(self) -> Path:
        return self.layout.root

    def scopes(self, agent: str | None, workspace: Path | None) -> list[Scope]:
        return self.layout.scopes(agent, workspace)

    def all_scopes(self) -> list[Scope]:
        """Every scope folder under the root (global, each project, each agent): what the
        CLI's entry listing and the desktop's memory browser show."""
        layout = self.layout
        found = [layout.global_scope()]
        for parent in ("projects", "agents"):
            folder = layout.root / parent
            if not folder.is_dir() or folder.is_symlink():
                continue
            for child in sorted(folder.iterdir()):
                if child.is_dir():
                    found.append(layout.scope_for_key(f"{parent}/{child.name}"))
        return found

    def pending(self) -> list[Suggestion]:
        return self.queue.pending()

    def pending_count(self) -> int:
        """How many suggestions wait; 0 when the queue cannot be read (never raises)."""
        try:
            return self.queue.count()
        except OSError:
            return 0

    def accept(self, ids: list[str]) -> list[Decision]:
        return self.queue.accept(ids)

    def reject(self, ids: list[str]) -> list[Decision]:
        return self.queue.reject(ids)

    def forget(self, path: str | Path) -> str:
        """Forget one entry by path (the person's own delete): its sentences are revoked."""
        scope, subject = self.layout.locate(path)
        with self.layout.write_lock():
            entry = self.store.forget(scope, subject, why="forget")
        return entry.canonical

    def explain(self, path: str | Path) -> Explanation:
        scope, subject = self.layout.locate(path)
        entry = self.store.get(scope, subject)
        if entry is None:
            raise UnknownEntry(f"no memory entry {scope.key}/{subject}.md")
        entry_id = self.store.entry_id(entry.canonical)
        records = self.receipts.records(scope.key, entry_id) if entry_id else []
        return Explanation(
            entry.canonical,
            entry_id,
            entry.kind,
            entry.fields.origin,
            entry.hash[:12],
            explain_records(records),
        )
