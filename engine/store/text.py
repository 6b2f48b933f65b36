"""Text that SQLite, JSON and a terminal can all hold.

A broken engine stream can leave lone UTF-16 surrogates in a Python string (half an emoji
per event, or a stray `\\ud800`). Such a string cannot be encoded as UTF-8, so it would fail
every export and resume later. Before anything is stored, pairs are joined into the
character they encode and every lone surrogate becomes U+FFFD.
"""

from __future__ import annotations

import sqlite3

REPLACEMENT = "\ufffd"


def repair_surrogates(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def decoded_column(value: str | bytes | None) -> str | None:
    """A TEXT column's value as clean text. Older Brims stored a string with lone
    surrogates as a BLOB of UTF-8 with the surrogates kept (`surrogatepass`)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogatepass")
    return None if value is None else repair_surrogates(value)


_TEXT_COLUMNS = {
    "messages": ("content", "tool_call_id", "name"),
    "conversations": ("title", "agent", "workspace"),
}


def repair_text_columns(conn: sqlite3.Connection) -> None:
    """Migration step: rewrite every BLOB an older Brim left in a text column as clean
    text, so export and resume never meet an unencodable string."""
    for table, columns in _TEXT_COLUMNS.items():
        key = "pk" if table == "messages" else "id"
        blobs = " OR ".join(f"typeof({c}) = 'blob'" for c in columns)
        rows = conn.execute(f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE {blobs}")
        for row in rows.fetchall():
            values = [decoded_column(v) for v in row[1:]]
            sets = ", ".join(f"{c} = ?" for c in columns)
            conn.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", (*values, row[0]))
