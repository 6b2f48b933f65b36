"""A second Brim process beside a live one: `brim conversations list` run while the window
is open must not delete the live database's -wal and -shm files (POSIX locks belong to the
process, so a stray descriptor on the database dropped the window's locks), and a crash
afterwards loses nothing the window had committed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.store import Store
from tests.helpers.cli import run_brim

# The window's shape: the library and each session hold a connection of their own.
WINDOW = """
import sys
from engine.library import Library
from engine.messages import user, assistant
from engine.paths import BrimPaths
from engine.store import Store

paths = BrimPaths.under(sys.argv[1]).ensure()
library = Library(paths)
library.open()
session_store = Store.open(paths.db_path)
conversation = session_store.create_conversation("default")
for line in sys.stdin:
    session_store.append_message(conversation, user(line.strip()))
    session_store.append_message(conversation, assistant("answer to " + line.strip()))
    library.listing()
    print(conversation, flush=True)
"""


def _contents(db: Path, conversation: str) -> list[str]:
    with Store.open(db) as store:
        return [m.content for m in store.messages(conversation)]


def test_listing_conversations_beside_a_live_window_loses_nothing_after_a_crash(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}
    window = subprocess.Popen(
        [sys.executable, "-c", WINDOW, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert window.stdin is not None and window.stdout is not None
    try:
        window.stdin.write("hello\n")
        window.stdin.flush()
        conversation = window.stdout.readline().strip()
        db = next(home.rglob("*.sqlite3"))
        wal = db.with_name(db.name + "-wal")
        assert wal.exists()

        listed = run_brim(["conversations", "list", "--json"], data_dir=home, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert conversation in json.dumps(json.loads(listed.stdout))
        assert wal.exists(), "the second process deleted the live window's WAL"

        for line in ("second message", "third message"):
            window.stdin.write(line + "\n")
            window.stdin.flush()
            assert window.stdout.readline().strip() == conversation
        os.kill(window.pid, signal.SIGKILL)
        window.wait(10)
    finally:
        if window.poll() is None:
            window.kill()
            window.wait(10)
        window.stdin.close()
        window.stdout.close()

    assert _contents(db, conversation) == [
        "hello",
        "answer to hello",
        "second message",
        "answer to second message",
        "third message",
        "answer to third message",
    ]


OTHER_PROCESS_OPENS = "import sys\nfrom engine.store import Store\nStore.open(sys.argv[1]).close()"


def test_two_stores_in_one_process_keep_the_wal_while_another_process_opens_and_closes(
    tmp_path,
):
    db = tmp_path / "brim.sqlite3"
    first, second = Store.open(db), Store.open(db)
    try:
        conversation = first.create_conversation("coder")
        subprocess.run([sys.executable, "-c", OTHER_PROCESS_OPENS, str(db)], check=True)
        assert db.with_name(db.name + "-wal").exists()
        assert db.with_name(db.name + "-shm").exists()
        second.create_conversation("coder")  # no 'disk I/O error' after the other one left
        assert len(first.list_conversations()) == 2
    finally:
        first.close()
        second.close()
    assert conversation
