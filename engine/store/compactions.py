"""What each compaction replaced, kept so the user can see it and put it back.

A compaction's rewrite archives the live rows (store.py, `replace_messages`); the
`compactions` table names, by row, the ones the checkpoint replaced. The compaction's id is
the id of the checkpoint message it wrote, which the saved "auto-compacted" row and the
timeline marker carry. The history as it stood before the compaction is the set of rows its
rewrite archived (they share its `created` time as their `archived_at`): a restore puts the
replaced messages back in that order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from engine.messages import Message
from engine.store.connection import StoreConnection
from engine.store.errors import UnknownCompaction
from engine.store.records import CompactionRecord
from engine.store.rows import MESSAGE_COLUMNS, message_from


def record_compaction(
    conn: sqlite3.Connection,
    conversation_id: str,
    compaction_id: str,
    replaced: Sequence[str],
    at: float,
) -> None:
    """Inside the rewrite's transaction, before its archiving: the live rows of the message
    ids in `replaced` are the ones this compaction replaces."""
    rows = conn.execute(
        "SELECT pk, id FROM messages WHERE conversation_id = ? AND archived_at IS NULL",
        (conversation_id,),
    ).fetchall()
    pk_of = {row["id"]: row["pk"] for row in rows}
    pks = [pk_of[i] for i in replaced if i in pk_of]
    conn.execute(
        "INSERT OR IGNORE INTO compactions (conversation_id, id, replaced, created)"
        " VALUES (?, ?, ?, ?)",
        (conversation_id, compaction_id, json.dumps(pks), at),
    )


class CompactionLog(StoreConnection):
    """The compactions table of one open database (read side; the writes ride on the
    rewrites in store.py, in their transactions)."""

    def compactions(self, conversation_id: str) -> list[CompactionRecord]:
        """The conversation's compactions, oldest first (numbered from 1)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, replaced, created, restored FROM compactions"
                " WHERE conversation_id = ? ORDER BY pk",
                (conversation_id,),
            ).fetchall()
        return [
            CompactionRecord(
                number, row["id"], len(json.loads(row["replaced"])), row["created"], row["restored"]
            )
            for number, row in enumerate(rows, start=1)
        ]

    def compaction_messages(self, conversation_id: str, compaction_id: str) -> list[Message]:
        """The messages `compaction_id` replaced, as they were when it ran, in their order."""
        with self._read() as conn:
            pks = json.loads(self._compaction_row(conn, conversation_id, compaction_id)["replaced"])
            if not pks:
                return []
            marks = ", ".join("?" * len(pks))
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                f" WHERE conversation_id = ? AND pk IN ({marks}) ORDER BY seq",
                (conversation_id, *pks),
            ).fetchall()
        return [message_from(r) for r in rows]

    def history_before(self, conversation_id: str, compaction_id: str) -> list[str]:
        """The message ids of the live history just before `compaction_id` ran, in order."""
        with self._read() as conn:
            at = self._compaction_row(conn, conversation_id, compaction_id)["created"]
            rows = conn.execute(
                "SELECT id FROM messages WHERE conversation_id = ? AND archived_at = ?"
                " ORDER BY seq",
                (conversation_id, at),
            ).fetchall()
        return [row["id"] for row in rows]

    @staticmethod
    def _compaction_row(
        conn: sqlite3.Connection, conversation_id: str, compaction_id: str
    ) -> sqlite3.Row:
        row = conn.execute(
            "SELECT replaced, created, restored FROM compactions"
            " WHERE conversation_id = ? AND id = ?",
            (conversation_id, compaction_id),
        ).fetchone()
        if row is None:
            raise UnknownCompaction(conversation_id, compaction_id)
        return row
