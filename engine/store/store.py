"""Conversations, messages, usage and receipts in one SQLite file.

Durability is the point: a message is committed before the model is called, so a crash or a
killed engine never costs what the user typed. The database runs in WAL mode with
`synchronous=NORMAL` (a commit survives a process crash; a power cut can lose at most the
last commits, never corrupt the file), foreign keys on, and a busy timeout so that two Brim
processes on one database wait for each other instead of failing.

The store is built in layers, one job each: opening.py opens, checks and migrates the file
(a damaged one is moved aside, never deleted); connection.py holds the one connection and
its transactions; usage.py records usage and receipts; compactions.py what each compaction
replaced; this module adds conversations and their messages, and `Store.open`.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from engine.messages import Message
from engine.store.compactions import CompactionLog, record_compaction
from engine.store.errors import (
    DuplicateMessage,
    StoreCorrupt,
    UnknownCompaction,
    UnknownConversation,
)
from engine.store.opening import DEFAULT_BUSY_TIMEOUT_S, migrate, move_aside, open_connection
from engine.store.records import ConversationInfo, MessageRecord
from engine.store.rows import (
    INFO_SQL,
    MESSAGE_COLUMNS,
    conversation_info,
    message_from,
    message_row,
    text_in,
    text_out,
    title_from,
)
from engine.store.schema import MIGRATIONS, Migration
from engine.store.usage import UsageLedger

__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "Store", "migrate", "move_aside"]


class Store(UsageLedger, CompactionLog):
    """One open database. Use `Store.open`; close it (or use it as a context manager)."""

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
        recovered_from: Path | None = None
        try:
            conn = open_connection(path, busy_timeout_s, check, migrations)
        except StoreCorrupt as exc:
            if not recover:
                raise
            conn = open_connection(path, busy_timeout_s, check, migrations)
            recovered_from = exc.moved_to
        store = cls(conn, path, busy_timeout_s)
        store.recovered_from = recovered_from
        return store

    # -- conversations ----------------------------------------------------------------

    def create_conversation(self, agent: str, title: str = "", workspace: str | None = None) -> str:
        conversation_id = uuid.uuid4().hex
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO conversations (id, title, agent, workspace, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, text_in(title), text_in(agent), text_in(workspace), now, now),
            )
        return conversation_id

    def get_conversation(
        self, conversation_id: str, *, include_deleted: bool = False
    ) -> ConversationInfo | None:
        with self._read() as conn:
            row = conn.execute(INFO_SQL + " WHERE c.id = ?", (conversation_id,)).fetchone()
        if row is None or (row["deleted"] is not None and not include_deleted):
            return None
        return conversation_info(row)

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
        sql = INFO_SQL
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY c.updated DESC, c.created DESC, c.id"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [conversation_info(r) for r in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        with self._write() as conn:
            self._live(conn, conversation_id)
            conn.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE id = ?",
                (text_in(title), time.time(), conversation_id),
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
                # A thinking model's reasoning, where there is some, in its own column.
                extra, values = (
                    (", reasoning", (text_in(message.reasoning),))
                    if message.reasoning
                    else ("", ())
                )
                conn.execute(
                    "INSERT INTO messages (conversation_id, seq, id, role, kind, content,"
                    f" tool_calls, tool_call_id, name, meta, created{extra})"
                    f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{', ?' * len(values)})",
                    (conversation_id, seq, *message_row(message), *values),
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
                title = title_from(message)
            conn.execute(
                "UPDATE conversations SET updated = ?, title = ? WHERE id = ?",
                (time.time(), text_in(text_out(title)), conversation_id),
            )

    def replace_messages(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        compaction: str | None = None,
        replaced: Sequence[str] = (),
    ) -> None:
        """Make `messages` the live history (after compaction or trimming rewrote it).

        Nothing is lost: the previous live rows are archived, not deleted, and stay
        readable with `messages(..., include_archived=True)` and `records()`. A rewrite by
        a compaction names its checkpoint's id (`compaction`) and the ids of the live
        messages it replaced (`replaced`): they stay retrievable by that id."""
        now = time.time()
        with self._write() as conn:
            self._live(conn, conversation_id)
            if compaction is not None:
                record_compaction(conn, conversation_id, compaction, replaced, now)
            self._rewrite(conn, conversation_id, messages, now)

    def restore_compaction(
        self, conversation_id: str, compaction_id: str, messages: Sequence[Message]
    ) -> None:
        """Make `messages` (the history with what `compaction_id` replaced put back) the
        live history, and mark the compaction restored, in one transaction."""
        now = time.time()
        with self._write() as conn:
            self._live(conn, conversation_id)
            changed = conn.execute(
                "UPDATE compactions SET restored = ? WHERE conversation_id = ? AND id = ?",
                (now, conversation_id, compaction_id),
            ).rowcount
            if not changed:
                raise UnknownCompaction(conversation_id, compaction_id)
            self._rewrite(conn, conversation_id, messages, now)

    def _rewrite(
        self,
        conn: sqlite3.Connection,
        conversation_id: str,
        messages: Sequence[Message],
        now: float,
    ) -> None:
        conn.execute(
            "UPDATE messages SET archived_at = ? WHERE conversation_id = ? AND archived_at IS NULL",
            (now, conversation_id),
        )
        self._insert(conn, conversation_id, messages)
        conn.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))

    def messages(self, conversation_id: str, include_archived: bool = False) -> list[Message]:
        """The live history in order, exactly as appended.

        With `include_archived`: the full record — every message ever stored, in the order
        it was first stored, in its original form (a message that a rewrite carried over
        unchanged or rewrote in place appears once, as first stored)."""
        if not include_archived:
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages"
                    " WHERE conversation_id = ? AND archived_at IS NULL ORDER BY seq",
                    (conversation_id,),
                ).fetchall()
            return [message_from(r) for r in rows]
        seen: set[str] = set()
        out: list[Message] = []
        for record in self.records(conversation_id):
            if record.message.id not in seen:
                seen.add(record.message.id)
                out.append(record.message)
        return out

    def records(
        self, conversation_id: str, *, roles: Sequence[str] | None = None
    ) -> list[MessageRecord]:
        """Every stored row, live and archived, in storage order (for export and review);
        with `roles`, only rows of those roles (the timeline needs notices and tool results,
        not the 20,000 chat rows of a long conversation)."""
        where, params = "conversation_id = ?", [conversation_id]
        if roles is not None:
            where += f" AND role IN ({', '.join('?' for _ in roles)})"
            params += list(roles)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY seq", params
            ).fetchall()
        return [MessageRecord(r["seq"], message_from(r), r["archived_at"]) for r in rows]
