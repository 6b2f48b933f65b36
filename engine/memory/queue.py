"""The review queue (`.pending-memory.json`): suggestions wait here until the person decides.

Nothing reaches memory from the queue except `accept`, which looks the suggestion up, writes
it and dequeues it under one hold of the memory write lock, so a concurrent reject cannot be
overridden and two accepts cannot both win. A crash between writing the entry and rewriting
the queue is covered by an intent record (`.accept-intent.json`) written first: whoever next
takes the lock finishes what the record says was done (the entry carries the suggestion's
ID) or drops it (nothing was written), so the entry ends up written and dequeued, or neither.

An amendment or revision records the entry's content hash when it was suggested; accepting
it fails, and it stays queued, if the entry changed since.

The queue is an entrance too: `add` refuses a suggestion holding control characters or a
secret, whoever built it; a queue file written before those checks is read with any
suggestion holding a secret dropped (and the file rewritten without it), and text with
control characters is shown visibly and cleaned when accepted.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from engine.memory.entries import MemoryEntry, parse_entry, render_entry
from engine.memory.errors import (
    EntryConflict,
    MemoryRefused,
    MemoryStoreError,
    SensitiveContent,
    UnknownSuggestion,
)
from engine.memory.jsonfile import read_json_object, write_json_object
from engine.memory.layout import MemoryLayout, canonical_path
from engine.memory.ledger import lesson_key
from engine.memory.plaintext import check_plain, strip_controls, visible
from engine.memory.store import MemoryStore
from engine.secret_detection import find_secret

log = logging.getLogger(__name__)

SuggestionKind = Literal["fact", "lesson", "revision"]
QUEUE_VERSION = 1


# Who suggested it, for the deterministic pass over the user's own statements
# (engine/memory/statements.py): its restatement gives way to any other suggestion that
# quotes exactly the same sentence.
STATEMENTS_ID = "memory-statements"


@dataclass(frozen=True)
class Suggestion:
    id: str
    kind: SuggestionKind
    action: str  # create | amend (facts), create | rewrite (lessons), delete | rewrite (revisions)
    scope: str  # the scope key
    subject: str
    statement: str = ""
    quote: str = ""
    keys: tuple[str, ...] = ()
    source: str = ""  # "conversation C message M"
    conversation: str = ""
    against_hash: str = ""  # the entry's hash when suggested (amend, rewrite, delete)
    against_text: str = ""
    reason: str = ""
    by: str = ""  # who suggested it: memory-extractor | memory-learner | agent
    created: float = field(default_factory=lambda: round(time.time(), 3))
    # Whose words the text is: `user` for a fact (it restates the quoted sentence the user
    # wrote), `agent` for a lesson or revision (the agent's own words, no quote). Derived,
    # never taken from the caller or the file.
    author: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "author", "user" if self.kind == "fact" and self.quote else "agent"
        )

    @property
    def path(self) -> str:
        return f"{self.scope}/{self.subject}.md"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["keys"] = list(self.keys)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Suggestion:
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in known}
        values["keys"] = tuple(str(k) for k in values.get("keys", ()) or ())
        return cls(**values)

    def describe(self) -> str:
        """One line for a checklist or a list; control characters shown, not obeyed."""
        if self.kind == "revision":
            what = "delete" if self.action == "delete" else "rewrite"
            text = self.statement or self.reason
            line = f"[revision: {what}] {self.path}: {text}".rstrip(": ")
            return visible(line + f"  (by {self.by or 'the agent'}, not the user's words)")
        line = f"[{self.kind}{' amend' if self.action == 'amend' else ''}] {self.path}: "
        line += self.statement
        if self.quote:
            line += f'  (user: "{_short(self.quote)}")'
        elif self.kind == "lesson":
            line += "  (the agent's own lesson, not the user's words)"
        return visible(line)

    def decision_keys(self) -> tuple[str, ...]:
        """The ledger keys a rejection revokes: a fact's sentence keys (whatever its
        wording), a lesson's scope and wording; a revision's none (its entry may change)."""
        if self.kind == "fact":
            return self.keys
        if self.kind == "lesson":
            return (lesson_key(self.scope, self.statement),)
        return ()

    def secret(self) -> str | None:
        """The kind of secret any of its texts holds, or None."""
        against = parse_entry(self.against_text).body if self.against_text else ""
        for text in (self.subject, self.statement, self.quote, self.reason, against):
            found = find_secret(text)
            if found is not None:
                return found
        return None


def new_suggestion_id() -> str:
    return "s-" + secrets.token_hex(4)


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Decision:
    id: str
    ok: bool
    message: str
    path: str = ""


class SuggestionQueue:
    def __init__(self, layout: MemoryLayout, store: MemoryStore) -> None:
        self.layout = layout
        self.store = store

    # -- reading ------------------------------------------------------------------------

    def _load(self) -> list[Suggestion]:
        """The queue file's suggestions, less any holding a secret (an older Brim queued
        some): those are never shown, and are gone from the file at its next rewrite."""
        return [s for s in self._load_all() if s.secret() is None]

    def _load_all(self) -> list[Suggestion]:
        data = read_json_object(self.layout.queue_path)
        out: list[Suggestion] = []
        items = data.get("suggestions")
        if not isinstance(items, list):
            items = []  # absent, or damaged by hand: an empty queue, not a crash
        for item in items:
            if not isinstance(item, dict):
                continue
            try:
                out.append(Suggestion.from_dict(item))
            except (TypeError, ValueError):
                log.warning("memory: skipping a malformed queued suggestion")
        return out

    def _save(self, items: list[Suggestion]) -> None:
        write_json_object(
            self.layout.queue_path,
            {"version": QUEUE_VERSION, "suggestions": [s.to_dict() for s in items]},
        )

    def pending(self) -> list[Suggestion]:
        """The waiting suggestions, oldest first. A suggestion an interrupted accept already
        wrote counts as accepted, even before the next lock holder tidies up. A queue file
        that still holds a secret is rewritten without it at once."""
        items = self._load_all()
        if any(s.secret() is not None for s in items):
            self.scrub()
            items = self._load()
        done = self._applied_intent()
        return [s for s in items if s.id != done]

    def count(self) -> int:
        return len(self.pending())

    def get(self, suggestion_id: str) -> Suggestion:
        for item in self.pending():
            if item.id == suggestion_id:
                return item
        raise UnknownSuggestion(f"no waiting suggestion {suggestion_id!r}")

    def scrub(self) -> int:
        """Rewrite the queue file without the suggestions that hold a secret; how many."""
        with self.layout.write_lock():
            items = self._load_all()
            kept = [s for s in items if s.secret() is None]
            if len(kept) != len(items):
                self._save(kept)
                log.warning(
                    "memory: dropped %d queued suggestions that held a secret",
                    len(items) - len(kept),
                )
        return len(items) - len(kept)

    # -- the intent record ----------------------------------------------------------------

    def _intent(self) -> dict[str, Any] | None:
        path = self.layout.intent_path
        if not path.exists():
            return None
        data = read_json_object(path)
        return data or None

    def _applied_intent(self) -> str | None:
        """The ID of a suggestion whose accept wrote the entry but did not finish."""
        intent = self._intent()
        if intent is None:
            return None
        return str(intent["id"]) if self._intent_applied(intent) else None

    def _intent_applied(self, intent: dict[str, Any]) -> bool:
        try:
            scope, subject = self.layout.locate(str(intent.get("path", "")))
        except MemoryStoreError:
            return False
        entry = self.store.get(scope, subject)
        if intent.get("action") == "delete":
            return entry is None
        return entry is not None and entry.fields.suggestion == intent.get("id")

    def recover(self) -> None:
        """Finish or drop an accept a crash interrupted. The caller holds the write lock."""
        intent = self._intent()
        if intent is None:
            return
        if self._intent_applied(intent):
            revoke = [str(k) for k in intent.get("revoke", []) or []]
            if revoke:
                self.store.ledger.revoke(revoke, why="correct", path=str(intent.get("path")))
            items = self._load()
            kept = [s for s in items if s.id != intent.get("id")]
            if len(kept) != len(items):
                self._save(kept)
            log.info("memory: finished the interrupted accept of %s", intent.get("id"))
        else:
            log.info("memory: dropped the interrupted accept of %s", intent.get("id"))
        self.layout.intent_path.unlink(missing_ok=True)

    # -- changing ---------------------------------------------------------------------------

    def add(self, suggestion: Suggestion, *, replacing: Collection[str] = ()) -> Suggestion:
        """Queue a suggestion (under the lock). `EntryConflict` when the same claim waits
        already (same sentence keys, or the same text for the same entry), unless it is
        one of `replacing` with exactly the same sentence keys: that one is replaced. Refused
        whole when any of its text holds control characters or a secret."""
        check_plain("statement", suggestion.statement)
        check_plain("quote", suggestion.quote, multiline=True)
        check_plain("reason", suggestion.reason)
        found = suggestion.secret()
        if found is not None:
            raise SensitiveContent(
                f"this looks like {found}; memory never stores secrets, so nothing was queued"
            )
        with self.layout.write_lock():
            self.recover()
            # The person's decisions stand: a sentence (or lesson) they rejected, corrected
            # or forgot is not queued again, whichever pass suggests it.
            self.store.ledger.check(suggestion.decision_keys())
            items = self._load()
            if suggestion.keys:
                items = [
                    item
                    for item in items
                    if not (item.id in replacing and set(item.keys) == set(suggestion.keys))
                ]
            for item in items:
                same_keys = suggestion.keys and set(suggestion.keys) & set(item.keys)
                same_text = (
                    item.path == suggestion.path
                    and item.kind == suggestion.kind
                    and " ".join(item.statement.split()) == " ".join(suggestion.statement.split())
                    and item.action == suggestion.action
                )
                if same_keys or same_text:
                    raise EntryConflict(
                        f"that is already waiting for review as {item.id}; nothing was added"
                    )
            items.append(suggestion)
            self._save(items)
        return suggestion

    def reject(self, ids: list[str]) -> list[Decision]:
        """Dequeue each suggestion and record the decision in the source ledger (its
        `decision_keys`), so no later pass suggests it again from the same sentence."""
        out: list[Decision] = []
        with self.layout.write_lock():
            self.recover()
            items = self._load()
            by_id = {s.id: s for s in items}
            for sid in ids:
                if sid in by_id:
                    rejected = by_id.pop(sid)
                    self.store.ledger.revoke(
                        rejected.decision_keys(), why="reject", path=rejected.path
                    )
                    out.append(Decision(sid, True, "rejected"))
                else:
                    out.append(Decision(sid, False, "no waiting suggestion with that ID"))
            if len(by_id) != len(items):
                self._save([s for s in items if s.id in by_id])
        return out

    def accept(self, ids: list[str]) -> list[Decision]:
        """Write each suggestion to memory and dequeue it, all under one hold of the lock.
        A suggestion that fails (its entry changed, its sentence was revoked since) stays."""
        out: list[Decision] = []
        with self.layout.write_lock():
            self.recover()
            for sid in ids:
                items = self._load()
                match = next((s for s in items if s.id == sid), None)
                if match is None:
                    out.append(Decision(sid, False, "no waiting suggestion with that ID"))
                    continue
                try:
                    path = self._apply(match)
                except MemoryRefused as exc:
                    out.append(Decision(sid, False, str(exc), match.path))
                    continue
                self._save([s for s in items if s.id != sid])
                self.layout.intent_path.unlink(missing_ok=True)
                out.append(Decision(sid, True, "accepted", path))
        return out

    def _apply(self, s: Suggestion) -> str:
        """Check and write one suggestion; the intent record is written before the entry."""
        scope = self.layout.scope_for_key(s.scope)
        current = self.store.get(scope, s.subject)
        path = canonical_path(scope, s.subject)
        revoke: list[str] = []
        if s.kind == "fact":
            self.store.ledger.check(s.keys)
            if s.action == "create":
                if current is not None:
                    raise EntryConflict(
                        f"{path} was created since this was suggested; review it and suggest again"
                    )
            else:
                self._check_unchanged(s, current, path)
                assert current is not None
                revoke = [k for k in current.fields.keys if k not in s.keys]
            text = render_entry(
                kind="fact",
                origin="auto",
                statement=strip_controls(s.statement),
                quotes=(strip_controls(s.quote),) if s.quote else (),
                keys=s.keys,
                source=s.source,
                suggestion=s.id,
            )
        elif s.kind == "lesson":
            if s.action == "create" and current is not None:
                raise EntryConflict(f"{path} was created since this was suggested")
            if s.action != "create":
                self._check_unchanged(s, current, path)
            text = render_entry(
                kind="lesson",
                origin="agent",
                statement=strip_controls(s.statement),
                suggestion=s.id,
            )
        else:  # a revision from the curation call
            self._check_unchanged(s, current, path)
            assert current is not None
            if s.action == "delete":
                self._write_intent(s, path, "delete", [])
                self.store.forget(scope, s.subject, why="forget")
                return path
            if current.kind == "fact":
                raise EntryConflict(f"{path} holds the user's words; facts are never rewritten")
            text = render_entry(
                kind="lesson",
                origin="agent",
                statement=strip_controls(s.statement),
                suggestion=s.id,
            )
        self._write_intent(s, path, "write", revoke)
        self.store.write(scope, s.subject, text)
        if revoke:
            self.store.ledger.revoke(revoke, why="correct", path=path)
        return path

    def _check_unchanged(self, s: Suggestion, current: MemoryEntry | None, path: str) -> None:
        if current is None:
            raise EntryConflict(f"{path} no longer exists")
        if current.hash != s.against_hash:
            raise EntryConflict(
                f"{path} changed since this was suggested; it stays queued (reject it, or "
                "review the entry and suggest again)"
            )

    def _write_intent(self, s: Suggestion, path: str, action: str, revoke: list[str]) -> None:
        write_json_object(
            self.layout.intent_path,
            {"id": s.id, "path": path, "action": action, "revoke": revoke},
        )
