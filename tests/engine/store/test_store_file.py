"""The database file itself: migrations, damage, locks and two processes at once."""

import json
import sqlite3
import subprocess
import sys
import time

import pytest

from engine.messages import user
from engine.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Store,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
)
from engine.store.store import migrate


def user_version(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_a_new_database_is_migrated_to_the_current_schema(tmp_path):
    path = tmp_path / "deep" / "folder" / "brim.sqlite3"
    with Store.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
        assert store.check_integrity() == []
    assert user_version(path) == SCHEMA_VERSION


def test_opening_again_migrates_nothing_and_keeps_the_data(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        conversation = store.create_conversation("coder")
        store.append_message(conversation, user("still here"))
    for _ in range(2):
        with Store.open(path) as store:
            assert [m.content for m in store.messages(conversation)] == ["still here"]
            assert store.schema_version == SCHEMA_VERSION


def test_a_later_migration_upgrades_an_older_database_in_place(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        conversation = store.create_conversation("coder")
    upgraded = (*MIGRATIONS, ("ALTER TABLE conversations ADD COLUMN pinned INTEGER DEFAULT 0",))
    with Store.open(path, migrations=upgraded) as store:
        assert store.schema_version == SCHEMA_VERSION + 1
        assert store.get_conversation(conversation).agent == "coder"


def test_a_migration_that_fails_leaves_the_previous_version_intact(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        store.create_conversation("coder")
    broken = (
        *MIGRATIONS,
        ("CREATE TABLE extra (x)", "INSERT INTO no_such_table VALUES (1)"),
    )
    with pytest.raises(StoreError):
        Store.open(path, migrations=broken)
    assert user_version(path) == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()
    assert "extra" not in tables
    with Store.open(path) as store:
        assert len(store.list_conversations()) == 1


def test_migrating_twice_on_one_connection_is_a_no_op(tmp_path):
    conn = sqlite3.connect(tmp_path / "m.sqlite3", isolation_level=None)
    try:
        assert migrate(conn, tmp_path / "m.sqlite3", MIGRATIONS) == SCHEMA_VERSION
        assert migrate(conn, tmp_path / "m.sqlite3", MIGRATIONS) == SCHEMA_VERSION
    finally:
        conn.close()


def test_a_database_from_a_newer_brim_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "brim.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreTooNew, match="newer Brim"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_moved_aside_with_every_byte(tmp_path):
    path = tmp_path / "brim.sqlite3"
    junk = b"these are my notes, not a database\n" * 100
    path.write_bytes(junk)
    with pytest.raises(StoreCorrupt) as caught:
        Store.open(path)
    moved = caught.value.moved_to
    assert moved is not None and moved.name.startswith("brim.sqlite3.corrupt-")
    assert moved.read_bytes() == junk
    assert str(moved) in str(caught.value)
    assert not path.exists()
    with Store.open(path) as store:  # the next open starts fresh
        assert store.list_conversations() == []


def test_recover_moves_a_damaged_database_aside_and_starts_fresh(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        for i in range(200):
            conversation = store.create_conversation("coder", title=f"c{i}")
            store.append_message(conversation, user("x" * 500))
    data = bytearray(path.read_bytes())
    data[4096:12288] = b"\xa5" * 8192  # smash pages after the header page
    path.write_bytes(bytes(data))
    with Store.open(path, recover=True) as store:
        assert store.recovered_from is not None
        assert store.recovered_from.read_bytes() == bytes(data)
        assert store.list_conversations() == []
        assert store.check_integrity() == []


def test_a_truncated_database_is_corrupt_not_a_crash(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        for i in range(100):
            store.create_conversation("coder", title="t" * 200 + str(i))
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(StoreCorrupt):
        Store.open(path)
    assert len(list(tmp_path.glob("brim.sqlite3.corrupt-*"))) == 1


HOLD_EXCLUSIVE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("INSERT INTO conversations VALUES ('x', '', 'a', NULL, 0, 0, NULL)")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


def test_a_database_held_by_another_process_raises_locked_after_waiting(tmp_path):
    path = tmp_path / "brim.sqlite3"
    Store.open(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_EXCLUSIVE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(StoreLocked) as caught:
            Store.open(path, busy_timeout_s=0.5)
        assert time.monotonic() - started >= 0.4  # it waited before giving up
        assert "locked by another process" in str(caught.value)
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    assert list(tmp_path.glob("*.corrupt-*")) == []  # a lock is not damage
    with Store.open(path) as store:
        assert store.list_conversations() == []


WRITER = """
import sys
from engine.messages import Message
from engine.store import Store
path, conversation, who, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Store.open(path, busy_timeout_s=30) as store:
    for i in range(count):
        store.append_message(conversation, Message(role="user", content=f"{who}-{i}"))
        store.record_usage(conversation, agent=who, provider="ollama", model="m",
                           prompt_tokens=1, completion_tokens=1, cached_tokens=None)
"""


def test_two_processes_writing_at_once_lose_nothing_and_corrupt_nothing(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        conversation = store.create_conversation("shared")
    count = 60
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), conversation, who, str(count)])
        for who in ("a", "b")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    with Store.open(path) as store:
        contents = [m.content for m in store.messages(conversation)]
        assert sorted(contents) == sorted(f"{w}-{i}" for w in "ab" for i in range(count))
        for who in "ab":  # each writer's own messages stay in its order
            mine = [c for c in contents if c.startswith(who)]
            assert mine == [f"{who}-{i}" for i in range(count)]
        seqs = [r.seq for r in store.records(conversation)]
        assert seqs == list(range(1, 2 * count + 1))
        assert store.usage_summary()[0].requests == 2 * count
        assert store.check_integrity() == []


HOLD_WRITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("writing", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


def test_a_write_blocked_by_another_writer_raises_locked_and_changes_nothing(tmp_path):
    path = tmp_path / "brim.sqlite3"
    store = Store.open(path, busy_timeout_s=0.3)
    conversation = store.create_conversation("coder")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "writing"
        with pytest.raises(StoreLocked):
            store.append_message(conversation, user("blocked"))
        assert store.list_conversations()[0].message_count == 0  # reads still work (WAL)
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    store.append_message(conversation, user("after"))
    assert [m.content for m in store.messages(conversation)] == ["after"]
    store.close()


def test_a_path_that_cannot_be_a_database_is_an_error_not_moved_aside(tmp_path):
    folder = tmp_path / "brim.sqlite3"
    folder.mkdir()
    with pytest.raises(StoreError) as caught:
        Store.open(folder)
    assert not isinstance(caught.value, StoreCorrupt)
    assert folder.is_dir()


def _schema_byte_smashed(path):
    """A database whose schema text holds one byte that is not UTF-8 (a bit flip in the
    first page): SQLite's own error message about it is then not UTF-8 either."""
    with Store.open(path) as store:
        store.create_conversation("coder")
    data = bytearray(path.read_bytes())
    at = data.find(b"CREATE TABLE conversations")
    assert at > 0
    data[at + 7] = 0xFF
    path.write_bytes(bytes(data))


def test_a_damaged_byte_in_the_schema_is_corrupt_in_one_line_with_the_original_kept(tmp_path):
    path = tmp_path / "brim.sqlite3"
    _schema_byte_smashed(path)
    damaged = path.read_bytes()
    with pytest.raises(StoreCorrupt) as caught:
        Store.open(path)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 600
    assert caught.value.moved_to is not None
    assert caught.value.moved_to.read_bytes() == damaged
    with Store.open(path) as store:
        assert store.list_conversations() == []


def test_an_integrity_report_of_many_lines_is_one_short_line(tmp_path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        for i in range(300):
            conversation = store.create_conversation("coder", title=f"c{i}")
            store.append_message(conversation, user("x" * 300))
    data = bytearray(path.read_bytes())
    for page in range(3, len(data) // 4096, 2):  # every other page after the schema
        data[page * 4096 + 8 : page * 4096 + 40] = b"\x00\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt) as caught:
        Store.open(path)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 600


def test_text_an_older_brim_kept_as_blobs_is_repaired_on_open(tmp_path):
    """Version 1 stored a lone surrogate from a broken stream as a BLOB that decoded back to
    an unencodable string: export and resume died on it."""
    path = tmp_path / "brim.sqlite3"
    with Store.open(path, migrations=MIGRATIONS[:1]) as store:
        conversation = store.create_conversation("coder")
        store.append_message(conversation, user("ok"))
    conn = sqlite3.connect(path)
    broken = "half an emoji \ud83d then a lone \ud800 and a pair \ud83d\ude00".encode(
        "utf-8", "surrogatepass"
    )
    conn.execute(
        "INSERT INTO messages (conversation_id, seq, id, role, kind, content, created)"
        " VALUES (?, 2, 'm2', 'assistant', 'chat', ?, 0)",
        (conversation, broken),
    )
    conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (broken, conversation))
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        texts = [m.content for m in store.messages(conversation)]
        title = store.get_conversation(conversation).title
    assert texts[1] == "half an emoji \ufffd then a lone \ufffd and a pair 😀"
    assert title == texts[1]
    json.dumps(texts, ensure_ascii=False).encode("utf-8")  # exportable
    conn = sqlite3.connect(path)
    kinds = conn.execute("SELECT typeof(content) FROM messages").fetchall()
    conn.close()
    assert kinds == [("text",), ("text",)]


def test_a_message_with_lone_surrogates_is_stored_as_clean_text(tmp_path):
    with Store.open(tmp_path / "brim.sqlite3") as store:
        conversation = store.create_conversation("coder")
        store.append_message(conversation, user("split \ud83d\ude00 and lone \udc00"))
        assert store.messages(conversation)[0].content == "split 😀 and lone \ufffd"
