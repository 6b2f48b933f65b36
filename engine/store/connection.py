"""One open database connection, shared by every thread that calls the store.

Calls are synchronous and short (one small transaction each); the engine calls them from
its asyncio thread. A lock serialises calls from other threads on the one connection, and
SQLite's errors come out as the store's own (`StoreLocked`, `StoreCorrupt`, `StoreError`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from engine.store.errors import StoreError, UnknownConversation
from engine.store.opening import translate_error


class StoreConnection:
    """The connection's lifecycle and its read and write transactions."""

    def __init__(self, conn: sqlite3.Connection, path: Path, busy_timeout_s: float) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.recovered_from: Path | None = None  # where a damaged file was moved (recover=True)

    # -- lifecycle --------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._read() as conn:
            return conn.execute("PRAGMA user_version").fetchone()[0]

    def check_integrity(self) -> list[str]:
        """SQLite's full integrity check: an empty list when the database is sound."""
        with self._read() as conn:
            rows = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        return [] if rows == ["ok"] else rows

    # -- plumbing ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise StoreError(f"{self.path}: the store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise translate_error(exc, self.path, self.busy_timeout_s) from None

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; BEGIN IMMEDIATE takes the write lock up front, so
        two processes queue on the busy timeout instead of deadlocking on an upgrade."""
        with self._read() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    @staticmethod
    def _live(conn: sqlite3.Connection, conversation_id: str) -> sqlite3.Row:
        """A conversation's row, refusing one that is missing or deleted."""
        row = conn.execute(
            "SELECT title, deleted FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None or row["deleted"] is not None:
            raise UnknownConversation(conversation_id)
        return row

    @staticmethod
    def _require(conn: sqlite3.Connection, conversation_id: str | None) -> None:
        """Refuse a conversation that was never created (None: belongs to none)."""
        if conversation_id is None:
            return
        exists = conn.execute(
            "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if exists is None:
            raise UnknownConversation(conversation_id)
