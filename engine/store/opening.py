"""Opening the database file: connecting, migrating, and what happens to a damaged file.

A file that is not a SQLite database, or is damaged, is never deleted: it is renamed to
`<name>.corrupt-<timestamp>` (with its -wal/-shm files) and `StoreCorrupt` says where. A
database from a newer Brim is refused before anything in it is changed; one another process
holds past the busy timeout is `StoreLocked`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from engine.store.errors import StoreCorrupt, StoreError, StoreFull, StoreLocked, StoreTooNew
from engine.store.schema import Migration

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_S = 5.0
ONE_LINE_CHARS = 200

_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_FULL_CODE = 13  # SQLITE_FULL ("database or disk is full")
_IOERR_CODE = 10  # SQLITE_IOERR: a write into the WAL on a full disk can end as this
_NEARLY_FULL_BYTES = 1024 * 1024


def _error_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_busy(exc: sqlite3.Error) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in _BUSY_CODES
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def is_corrupt(exc: sqlite3.Error) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in _CORRUPT_CODES
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


def is_full(exc: sqlite3.Error, path: Path) -> bool:
    """SQLite's own "disk is full", or an I/O error on a disk with no room left."""
    code = _error_code(exc)
    text = str(exc).lower()
    if code == _FULL_CODE or (code is None and "disk is full" in text):
        return True
    if code == _IOERR_CODE or (code is None and "disk i/o error" in text):
        try:
            return shutil.disk_usage(path.parent).free < _NEARLY_FULL_BYTES
        except OSError:
            return False
    return False


def translate_error(exc: sqlite3.Error, path: Path, busy_timeout_s: float) -> StoreError:
    """What a failed statement on an open database means for its caller."""
    if is_busy(exc):
        return StoreLocked(path, busy_timeout_s)
    if is_full(exc, path):
        return StoreFull(path, str(exc))
    if is_corrupt(exc):
        return StoreCorrupt(path, str(exc), None)
    return StoreError(f"{path}: {exc}")


def _one_line(exc: BaseException) -> str:
    """An error's text as one short line (an integrity report can run to hundreds)."""
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= ONE_LINE_CHARS else text[: ONE_LINE_CHARS - 1] + "…"


def move_aside(path: Path, stamp: str | None = None) -> Path:
    """Rename a damaged database (and its -wal/-shm/-journal files) out of the way, keeping
    every byte: `<name>.corrupt-<timestamp>`. Returns the new path of the main file."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 2
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.rename(path, target)
    for suffix in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.rename(side, target.with_name(target.name + suffix))
    return target


def migrate(conn: sqlite3.Connection, path: Path, migrations: Sequence[Migration]) -> int:
    """Apply the steps past the database's `user_version`, each in its own transaction.
    Returns the version now. Running it again is a no-op."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(migrations):
        raise StoreTooNew(path, version, len(migrations))
    for number in range(version + 1, len(migrations) + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read inside the write lock: another process may have migrated meanwhile.
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            if current < number:
                for step in migrations[number - 1]:
                    if callable(step):
                        step(conn)
                    else:
                        conn.execute(step)
                conn.execute(f"PRAGMA user_version = {int(number)}")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
    return conn.execute("PRAGMA user_version").fetchone()[0]


def open_connection(
    path: Path, busy_timeout_s: float, check: bool, migrations: Sequence[Migration]
) -> sqlite3.Connection:
    """A connection to the database at `path`, checked (`check`) and migrated; a damaged
    file is moved aside and `StoreCorrupt` raised."""
    # The file is never opened here except through SQLite: POSIX locks belong to the
    # process, and closing any other descriptor on the database drops the locks that
    # this process's live connections hold on it, so another process would take itself
    # for the last connection and delete the -wal and -shm files from under them.
    # A file that is not a database is SQLite's SQLITE_NOTADB on the first read.
    try:
        conn = sqlite3.connect(
            path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the database: {exc}") from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        # A newer Brim's database is refused before anything (even the journal mode)
        # is changed in it.
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(migrations):
            raise StoreTooNew(path, version, len(migrations))
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        if check:
            result = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
            if result != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(map(str, result[:3])))
        migrate(conn, path, migrations)
    except sqlite3.Error as exc:
        conn.close()
        if is_busy(exc):
            raise StoreLocked(path, busy_timeout_s) from None
        if is_corrupt(exc) or exc.__class__ is sqlite3.DatabaseError:
            raise StoreCorrupt(path, _one_line(exc), move_aside(path)) from None
        raise StoreError(f"{path}: {_one_line(exc)}") from None
    except StoreTooNew:
        conn.close()
        raise
    except Exception as exc:
        # Anything else while opening (a damaged schema makes SQLite's own error text
        # undecodable: UnicodeDecodeError) is damage too: one line, the file kept aside.
        conn.close()
        raise StoreCorrupt(path, _one_line(exc), move_aside(path)) from None
    except BaseException:
        conn.close()
        raise
    return conn
