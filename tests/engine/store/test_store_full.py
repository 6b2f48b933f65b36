"""A database that cannot grow says the disk is full (StoreFull), and keeps what it had.

SQLite's `max_page_count` makes the database file as full as a full disk would, through
SQLite's own SQLITE_FULL, on any machine (the end-to-end case, a real full tmpfs, is in
tests/reliability/test_disk_full.py and needs root to mount one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.messages import assistant, user
from engine.store import Store, StoreFull


def test_a_database_that_cannot_grow_raises_store_full_and_keeps_what_it_had(tmp_path: Path):
    store = Store.open(tmp_path / "brim.sqlite3")
    try:
        conversation = store.create_conversation("chat")
        store.append_message(conversation, user("remember this"))
        store.append_message(conversation, assistant("noted"))
        with store._read() as conn:  # the store boundary: no room for one more page
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreFull, match="the disk is full"):
            for _ in range(50):
                store.append_message(conversation, user("x" * 100_000))
        assert [m.content for m in store.messages(conversation)][:2] == ["remember this", "noted"]
    finally:
        store.close()
