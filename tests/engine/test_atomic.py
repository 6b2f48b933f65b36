"""Saves that survive crashes, and locks that keep two Brim processes from interleaving."""

import os
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from engine.atomic import FileBusy, atomic_write_bytes, atomic_write_text, file_lock, lock_path_for


def test_a_write_replaces_the_file_and_leaves_no_temporary_behind(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text("old")
    atomic_write_text(target, "new\r\nline")
    assert target.read_bytes() == b"new\r\nline"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_new_file_gets_the_usual_mode_and_an_existing_one_keeps_its_mode(tmp_path):
    fresh = tmp_path / "fresh"
    atomic_write_bytes(fresh, b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    private = tmp_path / "private"
    private.write_text("secret")
    private.chmod(0o600)
    atomic_write_text(private, "still secret")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_write_that_fails_midway_leaves_the_old_file_intact(tmp_path):
    target = tmp_path / "agent.toml"
    target.write_text("name = 'kept'")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "name = 'kept'"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.toml"]


def test_a_reader_never_sees_a_half_written_file(tmp_path):
    target = tmp_path / "state.json"
    small, big = b"a" * 10, b"b" * 2_000_000
    atomic_write_bytes(target, small)
    seen: set[int] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(len(target.read_bytes()))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(30):
            atomic_write_bytes(target, big if i % 2 == 0 else small)
    finally:
        stop.set()
        reader.join()
    assert seen <= {len(small), len(big)}


def test_the_lock_file_is_a_hidden_sibling(tmp_path):
    assert lock_path_for(tmp_path / "coder.toml") == tmp_path / ".coder.toml.lock"


def test_a_lock_held_by_another_process_makes_a_writer_wait_then_give_up(tmp_path):
    target = tmp_path / "settings.json"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from engine.atomic import file_lock
                with file_lock({str(target)!r}):
                    print("held", flush=True)
                    sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(FileBusy) as caught, file_lock(target, timeout_s=0.2):
            pass
        assert str(target) in str(caught.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    with file_lock(target, timeout_s=2):
        atomic_write_text(target, "{}")
    assert target.read_text() == "{}"


def test_the_lock_is_reentrant_within_one_thread(tmp_path):
    target = tmp_path / "x"
    with file_lock(target, timeout_s=0.2), file_lock(target, timeout_s=0.2):
        atomic_write_text(target, "ok")
    assert target.read_text() == "ok"
