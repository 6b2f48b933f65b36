"""The database schema as an ordered list of migrations.

`PRAGMA user_version` counts the steps applied. Each step runs in one transaction together
with the version bump, so a crash mid-migration leaves the previous version intact. Steps
are only ever appended: a released step is never edited, because databases in the field
have already run it.

Message rows are never deleted by compaction: `replace_messages` marks the old history
`archived_at` and inserts the new one after it, so export can show everything that was said.
A message id is unique among a conversation's live rows only (archived copies may share it).
A compaction row names the rows its rewrite archived and replaced (by `pk`), so the replaced
messages stay retrievable by the compaction's id, and restorable, for as long as the record.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from engine.store.text import repair_text_columns

# A step is SQL, or a function of the connection for what SQL cannot say.
Migration = tuple[str | Callable[[sqlite3.Connection], None], ...]

MIGRATIONS: tuple[Migration, ...] = (
    (
        """
        CREATE TABLE conversations (
            id        TEXT PRIMARY KEY,
            title     TEXT NOT NULL DEFAULT '',
            agent     TEXT NOT NULL,
            workspace TEXT,
            created   REAL NOT NULL,
            updated   REAL NOT NULL,
            deleted   REAL             -- soft delete: when; NULL while live
        )
        """,
        "CREATE INDEX conversations_by_update ON conversations(updated DESC)",
        "CREATE INDEX conversations_by_agent ON conversations(agent, updated DESC)",
        """
        CREATE TABLE messages (
            pk              INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            seq             INTEGER NOT NULL,   -- order within the conversation, never reused
            id              TEXT NOT NULL,      -- Message.id
            role            TEXT NOT NULL,
            kind            TEXT NOT NULL,
            content         TEXT NOT NULL,      -- v1 kept a BLOB here for unencodable text
            tool_calls      TEXT,               -- JSON [[id, name, arguments], ...] or NULL
            tool_call_id    TEXT,
            name            TEXT,
            meta            TEXT,               -- JSON [[key, value], ...] or NULL
            created         REAL NOT NULL,
            archived_at     REAL                -- replaced by a rewrite (compaction); NULL: live
        )
        """,
        "CREATE UNIQUE INDEX messages_by_seq ON messages(conversation_id, seq)",
        """
        CREATE UNIQUE INDEX messages_live_id ON messages(conversation_id, id)
            WHERE archived_at IS NULL
        """,
        """
        CREATE TABLE usage (
            pk                INTEGER PRIMARY KEY,
            conversation_id   TEXT REFERENCES conversations(id) ON DELETE SET NULL,
            agent             TEXT NOT NULL,
            provider          TEXT NOT NULL,
            model             TEXT NOT NULL,
            purpose           TEXT NOT NULL DEFAULT 'chat',  -- chat | summary | ...
            prompt_tokens     INTEGER,
            completion_tokens INTEGER,
            cached_tokens     INTEGER,          -- NULL: the engine did not report it
            created           REAL NOT NULL
        )
        """,
        "CREATE INDEX usage_by_conversation ON usage(conversation_id)",
        """
        CREATE TABLE receipts (
            pk                INTEGER PRIMARY KEY,
            conversation_id   TEXT REFERENCES conversations(id) ON DELETE CASCADE,
            elapsed_s         REAL NOT NULL,
            prompt_tokens     INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            tokens_per_s      REAL NOT NULL,
            finished_at       REAL NOT NULL
        )
        """,
        "CREATE INDEX receipts_by_conversation ON receipts(conversation_id, finished_at)",
    ),
    # 2: text an older Brim kept as BLOBs (lone surrogates from a broken stream) made clean.
    (repair_text_columns,),
    # 3: what each compaction replaced, and whether the user restored it.
    (
        """
        CREATE TABLE compactions (
            pk              INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            id              TEXT NOT NULL,      -- the checkpoint (summary) message's id
            replaced        TEXT NOT NULL,      -- JSON [pk, ...]: the archived rows, in order
            created         REAL NOT NULL,
            restored        REAL                -- when the user put them back; NULL: never
        )
        """,
        "CREATE UNIQUE INDEX compactions_by_id ON compactions(conversation_id, id)",
    ),
    # 4: what the engine's prompt cache served on the turn's last request. cache_reported:
    # 1 the engine said (cached_tokens holds it), 0 it did not; NULL a receipt from before.
    (
        "ALTER TABLE receipts ADD COLUMN cached_tokens INTEGER",
        "ALTER TABLE receipts ADD COLUMN cache_reported INTEGER",
    ),
    # 5: what a thinking model reasoned before an answer (Message.reasoning), kept apart from
    # its content; NULL: none.
    ("ALTER TABLE messages ADD COLUMN reasoning TEXT",),
)

SCHEMA_VERSION = len(MIGRATIONS)
