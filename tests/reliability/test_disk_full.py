"""A full disk is an `error` event on the stream, the session goes on, and nothing is lost.

Before, a write that found the disk full ended `brim chat --headless` with "disk I/O error"
on stderr and no event on stdout. Now the line that could not be saved is refused with an
`error` event (kind `disk_full`; a window gets the text back in the composer), what was saved
before stays intact, and once there is space again the next line is answered and saved.

The disk is a real one: a 4 MB tmpfs mounted for the test (root only), filled up.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer
from tests.reliability.headless import Headless, answered, errors

OK = "Hello from the fake engine."


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_is_an_error_event_and_loses_nothing(small_disk: Path):
    home = small_disk / "home"
    with FakeLlamaServer(n_ctx=8192) as fake:
        flags = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        brim = Headless(home, flags)
        try:
            brim.ready(timeout=60)
            first = brim.turn("remember this line", timeout=60)
            assert errors(first) == [] and answered(first) == OK
            filler = _fill(small_disk)
            line = "a line on a full disk " + "x" * 20_000
            refused = brim.turn(line, timeout=60)
            (error,) = errors(refused)
            assert error["kind"] == "disk_full", error
            assert "the disk is full" in error["message"]
            assert error["data"] == {"saved": False}
            sent = len(fake.chat_requests)
            filler.unlink()  # space again: the next line goes through
            after = brim.turn("and now?", timeout=60)
            assert errors(after) == [] and answered(after) == OK
            assert len(fake.chat_requests) == sent + 1
        finally:
            brim.close()
    assert "Traceback" not in brim.stderr, brim.stderr_tail()
    listed = run_brim(["conversations", "list", "--json"], data_dir=home, timeout=60)
    (conversation,) = json.loads(listed.stdout)
    export = run_brim(
        ["conversations", "export", conversation["id"], "--json"], data_dir=home, timeout=60
    )
    messages = json.loads(export.stdout)["messages"]
    said = [(m["role"], m["content"]) for m in messages if m["role"] in ("user", "assistant")]
    assert said == [
        ("user", "remember this line"),
        ("assistant", OK),
        ("user", "and now?"),
        ("assistant", OK),
    ]
