"""The memory files: reading scopes, snapshots with IDs and hashes, and every direct change.

Reads never raise for one bad scope: a scope folder that is a symlink (or sits under one), or
a file linked out of a scope, is skipped so an outside path can never enter a snapshot, a
receipt or a provenance record; a scope that cannot be listed is logged and skipped and the
others still load. Writes happen only under the memory write lock, each file atomically.

Forgetting (deleting) an entry revokes its quoted sentences in the source ledger, starts a
new epoch for its scope and removes the scope's receipts, so a ticket issued before the
forget can no longer write.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.atomic import atomic_write_text
from engine.memory.entries import MAX_ENTRY_CHARS, MemoryEntry, parse_entry
from engine.memory.errors import BadSubject, EntryConflict, ScopeUnreadable, UnknownEntry
from engine.memory.jsonfile import move_aside, read_json_object, write_json_object
from engine.memory.layout import MemoryLayout, Scope, canonical_path, subject_slug
from engine.memory.ledger import SourceLedger

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotEntry:
    id: str  # "" when the snapshot could not assign one (read-only runs)
    entry: MemoryEntry
    epoch: str

    @property
    def canonical(self) -> str:
        return self.entry.canonical

    @property
    def hash(self) -> str:
        return self.entry.hash


@dataclass(frozen=True)
class Snapshot:
    entries: tuple[SnapshotEntry, ...] = ()
    skipped: tuple[str, ...] = ()  # scope keys that were linked or unreadable
    taken: float = field(default_factory=time.time)

    def get(self, canonical: str) -> SnapshotEntry | None:
        for item in self.entries:
            if item.canonical == canonical:
                return item
        return None

    def digest(self) -> dict[str, tuple[str, str]]:
        """canonical path → (first line, content hash): the session's memory diff basis."""
        return {e.canonical: (e.entry.first_line, e.hash) for e in self.entries}


class MemoryStore:
    def __init__(self, layout: MemoryLayout) -> None:
        self.layout = layout
        self.ledger = SourceLedger(layout.ledger_path)

    # -- reading ------------------------------------------------------------------------

    def _linked(self, folder: Path) -> bool:
        """Whether the folder, or any folder between it and the memory root, is a link."""
        root = self.layout.root
        try:
            rel = folder.relative_to(root)
        except ValueError:
            return True
        current = root
        if current.is_symlink():
            return True
        for part in rel.parts:
            current = current / part
            if current.is_symlink():
                return True
        return False

    def read_scope(self, scope: Scope) -> list[MemoryEntry]:
        """The scope's entries, by subject. `ScopeUnreadable` for a linked or unreadable
        scope; a scope that does not exist yet is empty."""
        if self._linked(scope.folder):
            raise ScopeUnreadable(f"{scope.key} is a symbolic link; linked scopes are skipped")
        try:
            items = sorted(os.scandir(scope.folder), key=lambda d: d.name)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ScopeUnreadable(f"{scope.key} could not be read: {exc}") from exc
        out: list[MemoryEntry] = []
        for item in items:
            if not item.name.endswith(".md") or item.name.startswith("."):
                continue
            try:
                if item.is_symlink() or not item.is_file(follow_symlinks=False):
                    log.info("memory: skipping linked or special file %s/%s", scope.key, item.name)
                    continue
                subject = subject_slug(item.name)
            except (OSError, BadSubject):
                continue
            entry = self._read_file(scope, subject, Path(item.path))
            if entry is not None:
                out.append(entry)
        return out

    def _read_file(self, scope: Scope, subject: str, path: Path) -> MemoryEntry | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                raw = handle.read(MAX_ENTRY_CHARS * 8)
            text = raw.decode("utf-8", errors="replace")
        except OSError as exc:
            log.warning("memory: could not read %s/%s: %s", scope.key, path.name, exc)
            return None
        return MemoryEntry(scope, subject, path, text, parse_entry(text))

    def get(self, scope: Scope, subject: str) -> MemoryEntry | None:
        if self._linked(scope.folder):
            return None
        path = scope.folder / f"{subject}.md"
        if path.is_symlink() or not path.is_file():
            return None
        return self._read_file(scope, subject, path)

    def entries(self, scopes: list[Scope]) -> tuple[list[MemoryEntry], list[str]]:
        """Every entry of the scopes, and the keys of the scopes skipped (logged)."""
        found: list[MemoryEntry] = []
        skipped: list[str] = []
        for scope in scopes:
            try:
                found.extend(self.read_scope(scope))
            except ScopeUnreadable as exc:
                log.warning("memory: %s; skipped", exc)
                skipped.append(scope.key)
        return found, skipped

    def snapshot(self, scopes: list[Scope], *, assign_ids: bool) -> Snapshot:
        """Read every file of the scopes once. With `assign_ids`, entries seen for the first
        time get an ID in the index (under the lock); without, nothing is written."""
        found, skipped = self.entries(scopes)
        index = self._index()
        epochs = self._epochs()
        missing_ids = [e.canonical for e in found if e.canonical not in index]
        missing_epochs = [s.key for s in scopes if s.key not in epochs]
        if assign_ids and (missing_ids or missing_epochs):
            with self.layout.write_lock():
                index = self._index()
                epochs = self._epochs()
                now = round(time.time(), 3)
                for canonical in missing_ids:
                    if canonical not in index:
                        index[canonical] = {"id": "m-" + secrets.token_hex(6), "first_seen": now}
                for key in missing_epochs:
                    epochs.setdefault(key, secrets.token_hex(8))
                self._write_index(index)
                self._write_epochs(epochs)
        items = tuple(
            SnapshotEntry(
                str(index.get(e.canonical, {}).get("id", "")),
                e,
                str(epochs.get(e.scope.key, "")),
            )
            for e in found
        )
        return Snapshot(items, tuple(skipped))

    # -- the index and the epochs ---------------------------------------------------------

    def _index(self) -> dict[str, dict[str, object]]:
        data = read_json_object(self.layout.index_path).get("entries", {})
        return data if isinstance(data, dict) else {}

    def _write_index(self, index: dict[str, dict[str, object]]) -> None:
        write_json_object(self.layout.index_path, {"entries": index})

    def entry_id(self, canonical: str) -> str:
        return str(self._index().get(canonical, {}).get("id", ""))

    def _epochs(self) -> dict[str, str]:
        path = self.layout.epochs_path
        try:
            data = read_json_object(path)
        except OSError:
            # Unreadable (not merely invalid): moved aside and replaced, every scope anew.
            try:
                move_aside(path)
            except OSError:
                log.warning("memory: the epoch file could not be moved aside", exc_info=True)
            data = {}
        epochs = data.get("scopes", {})
        return {str(k): str(v) for k, v in epochs.items()} if isinstance(epochs, dict) else {}

    def _write_epochs(self, epochs: dict[str, str]) -> None:
        write_json_object(self.layout.epochs_path, {"scopes": epochs})

    def epoch(self, scope_key: str) -> str:
        return self._epochs().get(scope_key, "")

    # -- writing (callers hold the write lock) ----------------------------------------------

    def _scope_folder_for_write(self, scope: Scope) -> Path:
        if self._linked(scope.folder):
            raise BadSubject(f"{scope.key} is a symbolic link; memory does not write through it")
        scope.folder.mkdir(parents=True, exist_ok=True)
        return scope.folder

    def write(self, scope: Scope, subject: str, text: str) -> MemoryEntry:
        """Create or replace one entry file atomically (the final name replaced, not
        followed). The caller holds the write lock and has done every check."""
        folder = self._scope_folder_for_write(scope)
        path = folder / f"{subject}.md"
        atomic_write_text(path, text)
        return MemoryEntry(scope, subject, path, text, parse_entry(text))

    def forget(self, scope: Scope, subject: str, *, why: str = "forget") -> MemoryEntry:
        """Delete an entry: revoke its sentences, start a new epoch for its scope, drop the
        scope's receipts and the entry's ID. The caller holds the write lock."""
        entry = self.get(scope, subject)
        if entry is None:
            raise UnknownEntry(f"no memory entry {canonical_path(scope, subject)}")
        self.ledger.revoke(entry.fields.keys, why=why, path=entry.canonical)
        self.new_epoch(scope)
        entry.path.unlink()
        index = self._index()
        if index.pop(entry.canonical, None) is not None:
            self._write_index(index)
        return entry

    def new_epoch(self, scope: Scope) -> str:
        epochs = self._epochs()
        epochs[scope.key] = secrets.token_hex(8)
        self._write_epochs(epochs)
        receipts = self.layout.receipts_dir / scope.key
        if receipts.is_dir() and not receipts.is_symlink():
            shutil.rmtree(receipts, ignore_errors=True)
        return epochs[scope.key]

    def rename(self, scope: Scope, subject: str, new_subject: str) -> MemoryEntry:
        entry = self.get(scope, subject)
        if entry is None:
            raise UnknownEntry(f"no memory entry {canonical_path(scope, subject)}")
        target = scope.folder / f"{new_subject}.md"
        if target.exists() or target.is_symlink():
            raise EntryConflict(f"{canonical_path(scope, new_subject)} exists already")
        os.replace(entry.path, target)
        index = self._index()
        record = index.pop(entry.canonical, None)
        if record is not None:
            index[canonical_path(scope, new_subject)] = record
            self._write_index(index)
        return MemoryEntry(scope, new_subject, target, entry.text, entry.fields)
