"""Receipts: which memory entries each provider request carried, per entry.

A receipt is written pending beside the provider call and completed after it; a call that
fails leaves it pending, so a crash never looks like a success. Each receipt is a ticket
issued against the scope's epoch: forgetting an entry starts a new epoch (and removes the
scope's receipts), and a ticket from an older epoch, or for an entry whose ID is gone or
changed, writes nothing.

    MEMORY_ROOT/.receipts/SCOPE_KEY/ENTRY_ID.jsonl    one JSON object per line

At most `MAX_RECEIPTS_PER_ENTRY` tickets are kept per entry, pruned once every
`PRUNE_EVERY_WRITES` writes and at a process's first write to a file. Receipts are records
for `brim memory explain`; nothing acts on them yet (calibration needs independent labels
before a receipt may drive a lesson change).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.atomic import atomic_write_text
from engine.memory.layout import MemoryLayout
from engine.memory.store import MemoryStore

log = logging.getLogger(__name__)

MAX_RECEIPTS_PER_ENTRY = 128
PRUNE_EVERY_WRITES = 32
EXPLAIN_RECORDS = 5


@dataclass(frozen=True)
class Ticket:
    ticket: str
    entry_id: str
    path: str  # canonical
    scope: str
    epoch: str
    hash: str  # the entry's content hash in the run's snapshot
    exposure: str  # "standing" | "view"
    conversation: str
    request: str  # a digest of the request's message hashes
    issued: float = field(default_factory=lambda: round(time.time(), 3))


class Receipts:
    def __init__(self, layout: MemoryLayout, store: MemoryStore) -> None:
        self.layout = layout
        self.store = store
        self._writes = 0
        self._touched: set[Path] = set()
        self._seen: set[Path] = set()  # files this process has written to

    def _file(self, scope_key: str, entry_id: str) -> Path:
        return self.layout.receipts_dir / scope_key / f"{entry_id}.jsonl"

    def _valid(self, t: Ticket) -> bool:
        return bool(t.entry_id) and (
            self.store.epoch(t.scope) == t.epoch and self.store.entry_id(t.path) == t.entry_id
        )

    def _append(self, t: Ticket, record: dict[str, Any]) -> None:
        path = self._file(t.scope, t.entry_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
        self._writes += 1
        first_touch = path not in self._seen
        self._seen.add(path)
        self._touched.add(path)
        # Each process also prunes a file the first time it writes there: many short runs,
        # each under PRUNE_EVERY_WRITES writes, must not let a file grow without bound.
        if first_touch or self._writes % PRUNE_EVERY_WRITES == 0:
            self._prune()

    def write_pending(self, tickets: list[Ticket]) -> list[Ticket]:
        """Write the tickets still valid for their epoch; returns those written."""
        if not tickets:
            return []
        written: list[Ticket] = []
        with self.layout.write_lock():
            for t in tickets:
                if not self._valid(t):
                    continue
                self._append(t, {**asdict(t), "status": "pending", "at": t.issued})
                written.append(t)
        return written

    def complete(self, tickets: list[Ticket], *, prompt_tokens: int | None = None) -> int:
        """Mark written tickets completed (the provider answered); stale ones are dropped."""
        done = 0
        if not tickets:
            return 0
        with self.layout.write_lock():
            for t in tickets:
                if not self._valid(t):
                    continue
                record: dict[str, Any] = {
                    "ticket": t.ticket,
                    "status": "completed",
                    "at": round(time.time(), 3),
                }
                if prompt_tokens is not None:
                    record["prompt_tokens"] = prompt_tokens
                self._append(t, record)
                done += 1
        return done

    def _prune(self) -> None:
        for path in sorted(self._touched):
            try:
                records = _read_lines(path)
            except OSError:
                continue
            order: list[str] = []
            for record in records:
                tid = str(record.get("ticket", ""))
                if tid not in order:
                    order.append(tid)
            if len(order) <= MAX_RECEIPTS_PER_ENTRY:
                continue
            keep = set(order[-MAX_RECEIPTS_PER_ENTRY:])
            kept = [r for r in records if str(r.get("ticket", "")) in keep]
            text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in kept)
            atomic_write_text(path, text)
        self._touched.clear()

    def records(self, scope_key: str, entry_id: str) -> list[dict[str, Any]]:
        """One record per ticket (pending, or completed with its completion), newest first."""
        path = self._file(scope_key, entry_id)
        try:
            lines = _read_lines(path)
        except OSError:
            return []
        tickets: dict[str, dict[str, Any]] = {}
        for record in lines:
            tid = str(record.get("ticket", ""))
            if record.get("status") == "pending":
                tickets[tid] = dict(record)
            elif tid in tickets:
                tickets[tid]["status"] = record.get("status", "completed")
                tickets[tid]["completed_at"] = record.get("at")
                if "prompt_tokens" in record:
                    tickets[tid]["prompt_tokens"] = record["prompt_tokens"]
        order = {tid: i for i, tid in enumerate(tickets)}
        return sorted(
            tickets.values(),
            key=lambda r: (float(r.get("at", 0)), order[str(r.get("ticket", ""))]),
            reverse=True,
        )

    def ticket_count(self, scope_key: str, entry_id: str) -> int:
        return len(self.records(scope_key, entry_id))


def _read_lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line after a crash
            if isinstance(value, dict):
                out.append(value)
    return out


def explain_records(records: list[dict[str, Any]], limit: int = EXPLAIN_RECORDS) -> list[dict]:
    """The most recent records for `brim memory explain`: no raw memory text, only what
    identifies the exposure (hashes, IDs, times, status)."""
    shown = []
    for r in records[:limit]:
        shown.append(
            {
                "ticket": r.get("ticket"),
                "status": r.get("status"),
                "exposure": r.get("exposure"),
                "entry_hash": str(r.get("hash", ""))[:12],
                "request": str(r.get("request", ""))[:12],
                "conversation": r.get("conversation"),
                "at": r.get("at"),
                "completed_at": r.get("completed_at"),
            }
        )
    return shown
