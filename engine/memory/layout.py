"""Where memory lives: the scopes, and the hidden files beside them at the memory root.

    MEMORY_ROOT/global/SUBJECT.md              the user's own scope (every agent, every folder)
    MEMORY_ROOT/projects/NAME-HASH/SUBJECT.md  one workspace's project scope
    MEMORY_ROOT/agents/AGENT/SUBJECT.md        one agent's own scope
    MEMORY_ROOT/.pending-memory.json           the review queue
    MEMORY_ROOT/.reflected-conversations.json  per-conversation watermarks
    MEMORY_ROOT/.source-ledger.json            revoked sentence keys (cross-scope, hidden)
    MEMORY_ROOT/.index.json                    entry IDs, assigned on first snapshot
    MEMORY_ROOT/.epochs.json                   one epoch token per scope
    MEMORY_ROOT/.receipts/ID.jsonl             request-boundary receipts per entry
    MEMORY_ROOT/.memory.lock                   the memory write lock

Project scopes sit under the memory root rather than inside the workspace so the agent's own
file tools cannot edit memory around its checks, and one folder holds everything a watcher
needs to follow. A scope is identified by its folder relative to the root (its `key`); an
entry by `KEY/SUBJECT.md` (its canonical path).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.atomic import DEFAULT_LOCK_TIMEOUT_S, file_lock
from engine.memory.errors import BadSubject
from engine.paths import safe_component

ScopeKind = Literal["global", "project", "agent"]
SCOPE_KINDS: tuple[ScopeKind, ...] = ("global", "project", "agent")

QUEUE_NAME = ".pending-memory.json"
WATERMARK_NAME = ".reflected-conversations.json"
LEDGER_NAME = ".source-ledger.json"
INDEX_NAME = ".index.json"
EPOCHS_NAME = ".epochs.json"
RECEIPTS_DIR = ".receipts"
INTENT_NAME = ".accept-intent.json"
LOCK_TARGET = "memory"  # file_lock locks the sibling ".memory.lock"

MAX_SUBJECT_CHARS = 60
_SUBJECT_OK = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# Subjects that name the session rather than a topic: task state is not memory.
RESERVED_SUBJECTS = frozenset(
    {"task", "tasks", "todo", "todos", "session", "conversation", "progress", "notes", "misc"}
)


@dataclass(frozen=True)
class Scope:
    kind: ScopeKind
    key: str  # the folder relative to the memory root: "global", "projects/x-1a2b", ...
    folder: Path
    label: str  # what a person reads: "global", "project brim", "agent default"


def subject_slug(subject: str) -> str:
    """A subject as its file stem: lower case, words joined by hyphens. `BadSubject` when
    nothing usable is left, it is too long, or it names the session instead of a topic."""
    text = subject.strip().lower()
    if text.endswith(".md"):
        text = text[:-3]
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if not slug or not _SUBJECT_OK.match(slug):
        raise BadSubject(f"subject {subject!r} has no usable name; use a few words, e.g. 'editor'")
    if len(slug) > MAX_SUBJECT_CHARS:
        raise BadSubject(f"subject {subject!r} is too long (at most {MAX_SUBJECT_CHARS} chars)")
    if slug in RESERVED_SUBJECTS:
        raise BadSubject(
            f"subject {slug!r} names the session, not a lasting topic; task state is not memory"
        )
    return slug


def project_key(workspace: Path) -> str:
    resolved = str(workspace.expanduser().resolve())
    digest = hashlib.blake2b(resolved.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    name = safe_component(workspace.resolve().name or "root")[:40]
    return f"projects/{name}-{digest}"


@dataclass(frozen=True)
class MemoryLayout:
    """The memory root and every file in it; resolving creates nothing."""

    root: Path

    @property
    def queue_path(self) -> Path:
        return self.root / QUEUE_NAME

    @property
    def watermark_path(self) -> Path:
        return self.root / WATERMARK_NAME

    @property
    def ledger_path(self) -> Path:
        return self.root / LEDGER_NAME

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_NAME

    @property
    def epochs_path(self) -> Path:
        return self.root / EPOCHS_NAME

    @property
    def receipts_dir(self) -> Path:
        return self.root / RECEIPTS_DIR

    @property
    def intent_path(self) -> Path:
        return self.root / INTENT_NAME

    def global_scope(self) -> Scope:
        return Scope("global", "global", self.root / "global", "global")

    def project_scope(self, workspace: Path) -> Scope:
        key = project_key(workspace)
        return Scope("project", key, self.root / key, f"project {workspace.resolve().name}")

    def agent_scope(self, agent: str) -> Scope:
        key = f"agents/{safe_component(agent)}"
        return Scope("agent", key, self.root / key, f"agent {agent}")

    def scopes(self, agent: str | None, workspace: Path | None) -> list[Scope]:
        """The scopes one run may use, in the order the standing line lists them."""
        out = [self.global_scope()]
        if workspace is not None:
            out.append(self.project_scope(workspace))
        if agent:
            out.append(self.agent_scope(agent))
        return out

    def scope_for_key(self, key: str) -> Scope:
        """The scope a stored key names (a queued suggestion, an entry path)."""
        parts = key.strip("/").split("/")
        if parts == ["global"]:
            return self.global_scope()
        if len(parts) == 2 and parts[0] in ("projects", "agents") and parts[1]:
            if parts[1] in (".", "..") or "\\" in parts[1]:
                raise BadSubject(f"not a memory scope: {key!r}")
            kind: ScopeKind = "project" if parts[0] == "projects" else "agent"
            return Scope(kind, key.strip("/"), self.root / key.strip("/"), f"{kind} {parts[1]}")
        raise BadSubject(f"not a memory scope: {key!r}")

    def locate(self, path: str | Path) -> tuple[Scope, str]:
        """The scope and subject of an entry given as `KEY/SUBJECT.md` or as a file path
        under the root. `BadSubject` for anything else (a path outside memory included)."""
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                rel = candidate.resolve().relative_to(self.root.resolve())
            except ValueError:
                try:
                    rel = candidate.relative_to(self.root)
                except ValueError:
                    raise BadSubject(f"{path} is not inside the memory folder") from None
            text = rel.as_posix()
        else:
            text = candidate.as_posix()
        if not text.endswith(".md"):
            raise BadSubject(f"{path} is not a memory entry (a .md file)")
        key, _, name = text.rpartition("/")
        scope = self.scope_for_key(key)
        return scope, subject_slug(name)

    @contextmanager
    def write_lock(self, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> Iterator[None]:
        """The memory write lock: every write to a scope, the queue, the ledger, the index,
        the epochs or the watermarks happens while holding it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with file_lock(self.root / LOCK_TARGET, timeout_s):
            yield


def canonical_path(scope: Scope, subject: str) -> str:
    return f"{scope.key}/{subject}.md"
