"""Conversations, messages, usage and receipts in one SQLite file.

Durability is the point: a message is committed before the model is called, so a crash or a
killed engine never costs what the user typed. The database runs in WAL mode with
`synchronous=NORMAL` (a commit survives a process crash; a power cut can lose at most the
last commits, never corrupt the file), foreign keys on, and a busy timeout so that two Brim
processes on one database wait for each other instead of failing.

Calls are synchronous and short (one small transaction each); the engine calls them from
its asyncio thread. A lock serialises calls from other threads on the one connection.

A file that is not a SQLite database, or is damaged, is never deleted: it is renamed to
`<name>.corrupt-<timestamp>` (with its -wal/-shm files) and `StoreCorrupt` says where.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from engine.messages import Message, ToolCall
from engine.store.errors import (
    DuplicateMessage,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
    UnknownConversation,
)
from engine.store.records import (
    ConversationInfo,
    MessageRecord,
    Receipt,
    UsageRecord,
    UsageSummary,
)
from engine.store.schema import MIGRATIONS, Migration
from engine.store.text import decoded_column, repair_surrogates

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_S = 5.0
TITLE_CHARS = 60

_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_MESSAGE_COLUMNS = (
    "seq, id, role, kind, content, tool_calls, tool_call_id, name, meta, created, archived_at"
)


def _error_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_busy(exc: sqlite3.Error) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in _BUSY_CODES
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_corrupt(exc: sqlite3.Error) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in _CORRUPT_CODES
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


# --- encoding --------------------------------------------------------------------------


def _text_in(value: str | None) -> str | None:
    """Text for a TEXT column, with any lone surrogates of a broken stream repaired."""
    return None if value is None else repair_surrogates(value)


def _text_out(value: str | bytes | None) -> str | None:
    return decoded_column(value)


def _message_row(message: Message) -> tuple[Any, ...]:
    calls = (
        json.dumps([[c.id, c.name, c.arguments] for c in message.tool_calls])
        if message.tool_calls
        else None
    )
    try:
        meta = json.dumps([[k, v] for k, v in message.meta]) if message.meta else None
    except (TypeError, ValueError) as exc:
        raise StoreError(f"message {message.id}: meta values must be JSON values ({exc})") from None
    return (
        message.id,
        message.role,
        message.kind,
        _text_in(message.content),
        calls,
        _text_in(message.tool_call_id),
        _text_in(message.name),
        meta,
        float(message.created),
    )


def _clean_arguments(arguments: Any) -> Any:
    # JSON keeps a lone surrogate as an escape that loads back unencodable.
    return repair_surrogates(arguments) if isinstance(arguments, str) else arguments


def _message_from(row: sqlite3.Row) -> Message:
    calls = tuple(
        ToolCall(repair_surrogates(i), repair_surrogates(n), _clean_arguments(a))
        for i, n, a in json.loads(row["tool_calls"] or "[]")
    )
    meta = tuple((k, v) for k, v in json.loads(row["meta"] or "[]"))
    return Message(
        role=row["role"],
        content=_text_out(row["content"]) or "",
        tool_calls=calls,
        tool_call_id=_text_out(row["tool_call_id"]),
        name=_text_out(row["name"]),
        kind=row["kind"],
        id=row["id"],
        created=row["created"],
        meta=meta,
    )


def _title_from(message: Message) -> str:
    first = next((ln.strip() for ln in message.content.splitlines() if ln.strip()), "")
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


# --- opening ---------------------------------------------------------------------------

ONE_LINE_CHARS = 200


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


class Store:
    """One open database. Use `Store.open`; close it (or use it as a context manager)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, busy_timeout_s: float) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.recovered_from: Path | None = None  # where a damaged file was moved (recover=True)

    # -- lifecycle --------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        db_path: Path,
        *,
        recover: bool = False,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        check: bool = True,
        migrations: Sequence[Migration] = MIGRATIONS,
    ) -> Store:
        """Open (creating if needed) and migrate the database at `db_path`.

        A file that is not a SQLite database or fails `quick_check` (`check=True`) is moved
        aside; then `StoreCorrupt` is raised, or with `recover=True` a new database is
        started and `store.recovered_from` says where the old one went. Raises
        `StoreLocked` when another process holds the database past `busy_timeout_s`, and
        `StoreTooNew` for a database from a newer Brim."""
        path = Path(db_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls._open(path, busy_timeout_s, check, migrations)
        except StoreCorrupt as exc:
            if not recover:
                raise
            store = cls._open(path, busy_timeout_s, check, migrations)
            store.recovered_from = exc.moved_to
            return store

    @classmethod
    def _open(
        cls, path: Path, busy_timeout_s: float, check: bool, migrations: Sequence[Migration]
    ) -> Store:
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
            if _is_busy(exc):
                raise StoreLocked(path, busy_timeout_s) from None
            if _is_corrupt(exc) or exc.__class__ is sqlite3.DatabaseError:
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
        return cls(conn, path, busy_timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Store:
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

    def _translate(self, exc: sqlite3.Error) -> StoreError:
        if _is_busy(exc):
            return StoreLocked(self.path, self.busy_timeout_s)
        if _is_corrupt(exc):
            return StoreCorrupt(self.path, str(exc), None)
        return StoreError(f"{self.path}: {exc}")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise StoreError(f"{self.path}: the store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._translate(exc) from None

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
        row = conn.execute(
            "SELECT title, deleted FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None or row["deleted"] is not None:
            raise UnknownConversation(conversation_id)
        return row

    # -- conversations ----------------------------------------------------------------

    def create_conversation(self, agent: str, title: str = "", workspace: str | None = None) -> str:
        conversation_id = uuid.uuid4().hex
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO conversations (id, title, agent, workspace, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, _text_in(title), _text_in(agent), _text_in(workspace), now, now),
            )
        return conversation_id

    _INFO_SQL = (
        "SELECT c.id, c.title, c.agent, c.workspace, c.created, c.updated, c.deleted,"
        " (SELECT COUNT(*) FROM messages m"
        "   WHERE m.conversation_id = c.id AND m.archived_at IS NULL) AS message_count"
        " FROM conversations c"
    )

    @staticmethod
    def _info(row: sqlite3.Row) -> ConversationInfo:
        return ConversationInfo(
            id=row["id"],
            title=_text_out(row["title"]) or "",
            agent=_text_out(row["agent"]) or "",
            workspace=_text_out(row["workspace"]),
            created=row["created"],
            updated=row["updated"],
            message_count=row["message_count"],
            deleted=row["deleted"],
        )

    def get_conversation(
        self, conversation_id: str, *, include_deleted: bool = False
    ) -> ConversationInfo | None:
        with self._read() as conn:
            row = conn.execute(self._INFO_SQL + " WHERE c.id = ?", (conversation_id,)).fetchone()
        if row is None or (row["deleted"] is not None and not include_deleted):
            return None
        return self._info(row)

    def list_conversations(
        self, agent: str | None = None, *, include_deleted: bool = False
    ) -> list[ConversationInfo]:
        """Newest first. Soft-deleted conversations only with `include_deleted`."""
        where, params = [], []
        if agent is not None:
            where.append("c.agent = ?")
            params.append(agent)
        if not include_deleted:
            where.append("c.deleted IS NULL")
        sql = self._INFO_SQL
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY c.updated DESC, c.created DESC, c.id"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [self._info(r) for r in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        with self._write() as conn:
            self._live(conn, conversation_id)
            conn.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE id = ?",
                (_text_in(title), time.time(), conversation_id),
            )

    def delete_conversation(self, conversation_id: str) -> None:
        """Soft delete: hidden from lists and resume, kept until purged, undone by
        `restore_conversation`."""
        with self._write() as conn:
            self._live(conn, conversation_id)
            conn.execute(
                "UPDATE conversations SET deleted = ? WHERE id = ?", (time.time(), conversation_id)
            )

    def restore_conversation(self, conversation_id: str) -> None:
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE conversations SET deleted = NULL WHERE id = ?", (conversation_id,)
            ).rowcount
            if not changed:
                raise UnknownConversation(conversation_id)

    def purge_deleted(self, older_than_s: float = 30 * 24 * 3600) -> int:
        """Really delete conversations soft-deleted more than `older_than_s` ago (their
        messages and receipts with them; usage rows stay, unlinked). Returns how many."""
        cutoff = time.time() - older_than_s
        with self._write() as conn:
            return conn.execute(
                "DELETE FROM conversations WHERE deleted IS NOT NULL AND deleted <= ?", (cutoff,)
            ).rowcount

    # -- messages ---------------------------------------------------------------------

    @staticmethod
    def _insert(
        conn: sqlite3.Connection, conversation_id: str, messages: Iterable[Message]
    ) -> None:
        seq = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?",
            (conversation_id,),
        ).fetchone()[0]
        for message in messages:
            seq += 1
            try:
                conn.execute(
                    "INSERT INTO messages (conversation_id, seq, id, role, kind, content,"
                    " tool_calls, tool_call_id, name, meta, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (conversation_id, seq, *_message_row(message)),
                )
            except sqlite3.IntegrityError:
                raise DuplicateMessage(conversation_id, message.id) from None

    def append_message(self, conversation_id: str, message: Message) -> None:
        """Add one message at the end of the live history, committed before returning.

        The first user message of an untitled conversation becomes its title."""
        with self._write() as conn:
            info = self._live(conn, conversation_id)
            self._insert(conn, conversation_id, [message])
            title = info["title"]
            if not title and message.role == "user" and message.kind == "chat":
                title = _title_from(message)
            conn.execute(
                "UPDATE conversations SET updated = ?, title = ? WHERE id = ?",
                (time.time(), _text_in(_text_out(title)), conversation_id),
            )

    def replace_messages(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Make `messages` the live history (after compaction or trimming rewrote it).

        Nothing is lost: the previous live rows are archived, not deleted, and stay
        readable with `messages(..., include_archived=True)` and `records()`."""
        now = time.time()
        with self._write() as conn:
            self._live(conn, conversation_id)
            conn.execute(
                "UPDATE messages SET archived_at = ?"
                " WHERE conversation_id = ? AND archived_at IS NULL",
                (now, conversation_id),
            )
            self._insert(conn, conversation_id, messages)
            conn.execute(
                "UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id)
            )

    def messages(self, conversation_id: str, include_archived: bool = False) -> list[Message]:
        """The live history in order, exactly as appended.

        With `include_archived`: the full record — every message ever stored, in the order
        it was first stored, in its original form (a message that a rewrite carried over
        unchanged or rewrote in place appears once, as first stored)."""
        if not include_archived:
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM messages"
                    " WHERE conversation_id = ? AND archived_at IS NULL ORDER BY seq",
                    (conversation_id,),
                ).fetchall()
            return [_message_from(r) for r in rows]
        seen: set[str] = set()
        out: list[Message] = []
        for record in self.records(conversation_id):
            if record.message.id not in seen:
                seen.add(record.message.id)
                out.append(record.message)
        return out

    def records(self, conversation_id: str) -> list[MessageRecord]:
        """Every stored row, live and archived, in storage order (for export and review)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
        return [MessageRecord(r["seq"], _message_from(r), r["archived_at"]) for r in rows]

    # -- usage and receipts -----------------------------------------------------------

    def record_usage(
        self,
        conversation_id: str | None,
        *,
        agent: str,
        provider: str,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cached_tokens: int | None,
        purpose: str = "chat",
        created: float | None = None,
    ) -> None:
        """One request's usage as the engine reported it (None: not reported)."""
        with self._write() as conn:
            if conversation_id is not None:
                exists = conn.execute(
                    "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
                if exists is None:
                    raise UnknownConversation(conversation_id)
            conn.execute(
                "INSERT INTO usage (conversation_id, agent, provider, model, purpose,"
                " prompt_tokens, completion_tokens, cached_tokens, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    _text_in(agent),
                    provider,
                    _text_in(model),
                    purpose,
                    prompt_tokens,
                    completion_tokens,
                    cached_tokens,
                    time.time() if created is None else created,
                ),
            )

    def usage_summary(
        self, conversation_id: str | None = None, *, agent: str | None = None
    ) -> list[UsageSummary]:
        """Totals per provider and model, for one conversation or (None) for all."""
        where, params = [], []
        if conversation_id is not None:
            where.append("conversation_id = ?")
            params.append(conversation_id)
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        sql = (
            "SELECT provider, model, COUNT(*) AS requests,"
            " COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,"
            " SUM(cached_tokens) AS cached_tokens,"
            " COALESCE(SUM(completion_tokens), 0) AS completion_tokens FROM usage"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " GROUP BY provider, model ORDER BY provider, model"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            UsageSummary(
                provider=r["provider"],
                model=_text_out(r["model"]) or "",
                requests=r["requests"],
                prompt_tokens=r["prompt_tokens"],
                cached_tokens=r["cached_tokens"],
                completion_tokens=r["completion_tokens"],
            )
            for r in rows
        ]

    def usage_records(
        self, conversation_id: str, purpose: str | None = "chat"
    ) -> list[UsageRecord]:
        """One conversation's requests in the order they landed (`purpose` None: every kind);
        what a reopened conversation's context timeline is rebuilt from."""
        sql = (
            "SELECT purpose, prompt_tokens, completion_tokens, cached_tokens, created FROM usage"
            " WHERE conversation_id = ?"
        )
        params: list[Any] = [conversation_id]
        if purpose is not None:
            sql += " AND purpose = ?"
            params.append(purpose)
        sql += " ORDER BY created, pk"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            UsageRecord(
                purpose=r["purpose"],
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                cached_tokens=r["cached_tokens"],
                created=r["created"],
            )
            for r in rows
        ]

    def record_receipt(
        self,
        conversation_id: str | None,
        *,
        elapsed_s: float,
        prompt_tokens: int,
        completion_tokens: int,
        tokens_per_s: float,
        finished_at: float | None = None,
    ) -> None:
        """One turn's receipt (the figures of its turn_end event)."""
        with self._write() as conn:
            if conversation_id is not None:
                exists = conn.execute(
                    "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
                if exists is None:
                    raise UnknownConversation(conversation_id)
            conn.execute(
                "INSERT INTO receipts (conversation_id, elapsed_s, prompt_tokens,"
                " completion_tokens, tokens_per_s, finished_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    float(elapsed_s),
                    int(prompt_tokens),
                    int(completion_tokens),
                    float(tokens_per_s),
                    time.time() if finished_at is None else finished_at,
                ),
            )

    def receipts(self, conversation_id: str | None = None, limit: int = 100) -> list[Receipt]:
        """The most recent receipts, oldest first."""
        sql = "SELECT * FROM receipts"
        params: list[Any] = []
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY finished_at DESC, pk DESC LIMIT ?"
        params.append(limit)
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            Receipt(
                conversation_id=r["conversation_id"],
                elapsed_s=r["elapsed_s"],
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                tokens_per_s=r["tokens_per_s"],
                finished_at=r["finished_at"],
            )
            for r in reversed(rows)
        ]
