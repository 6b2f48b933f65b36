"""Bad input: damaged memory files never raise anything but memory's own errors, and a
damaged or locked database is one clear line to the user with the original kept."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.memory import MemoryService
from engine.memory.errors import MemoryStoreError
from engine.memory.reflect import Watermarks
from tests.helpers.cli import run_brim

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
damaged = st.one_of(
    st.binary(max_size=300),
    json_like.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(["conversations", "suggestions", "items", "version"]),
        json_like,
    ).map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.just("conversation-1"), json_like, min_size=1).map(
        lambda v: json.dumps({"conversations": v}).encode()
    ),
)
FILES = [".pending-memory.json", ".reflected-conversations.json", "global/spelling.md"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(FILES), data=damaged)
def test_a_damaged_memory_file_is_read_or_refused_with_memorys_own_errors(
    tmp_path_factory, which: str, data: bytes
):
    root = tmp_path_factory.mktemp("memory")
    (root / which).parent.mkdir(parents=True, exist_ok=True)
    (root / which).write_bytes(data)
    service = MemoryService(root)
    try:
        service.pending()
        service.pending_count()
        service.store.entries(service.scopes("default", None))
        Watermarks(service.layout).get("conversation-1")
    except MemoryStoreError:
        pass


def _engine() -> list[str]:
    return ["--provider", "llamacpp", "--model", "fake", "--base-url", "http://127.0.0.1:9"]


def test_a_corrupt_database_is_one_line_and_the_original_is_kept_aside(tmp_path: Path):
    db = tmp_path / "data" / "brim.sqlite3"
    db.parent.mkdir(parents=True)
    original = b"this is not a database, but it is somebody's file\n" * 40
    db.write_bytes(original)
    run = run_brim(["chat", "--headless", *_engine()], data_dir=tmp_path, timeout=60)
    assert run.returncode == 1
    (line,) = run.stderr.strip().splitlines()
    assert "not a readable Brim database" in line and "moved aside" in line
    (kept,) = db.parent.glob("brim.sqlite3.corrupt-*")
    assert kept.read_bytes() == original and str(kept) in line
    listed = run_brim(["conversations", "list", "--json"], data_dir=tmp_path, timeout=60)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]"
    assert kept.read_bytes() == original


def test_a_locked_database_is_one_line_and_left_untouched(tmp_path: Path):
    first = run_brim(["conversations", "list"], data_dir=tmp_path, timeout=60)
    assert first.returncode == 0
    db = tmp_path / "data" / "brim.sqlite3"
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        before = db.read_bytes()
        run = run_brim(["chat", "--headless", *_engine()], data_dir=tmp_path, timeout=60)
        assert db.read_bytes() == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.returncode == 1
    (line,) = run.stderr.strip().splitlines()
    assert "locked by another process" in line
    assert list(db.parent.glob("brim.sqlite3.corrupt-*")) == []
