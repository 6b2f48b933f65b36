"""Crash safety: a headless run killed with SIGKILL at random moments, over and over, while it
streams, compacts and queues memory suggestions, loses nothing it had committed and leaves
every file readable."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.context.work_state import Journal
from engine.memory import MemoryService
from engine.paths import BrimPaths
from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.helpers.fake_engines import FakeLlamaServer, Reply

PREF = "I always prefer British spelling in everything you write."
FILLER = "lorem ipsum dolor sit amet " * 30
KILLS = 50
MAX_RUNS = 150  # a run that finishes before its kill is a clean exit, not a kill
WINDOW = 2048

Row = tuple[Any, ...]


def _committed(db: Path, conversation: str) -> set[Row]:
    """Every message row of the conversation, read the way another process would see it."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute(
            "SELECT seq, id, role, kind, content FROM messages WHERE conversation_id = ?",
            (conversation,),
        ).fetchall()
    finally:
        con.close()
    return set(rows)


def _integrity(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


def _start(home: Path, url: str, conversation: str | None, turns: list[str]) -> subprocess.Popen:
    args = [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "chat", "--headless"]
    args += ["--provider", "llamacpp", "--model", "fake", "--base-url", url]
    if conversation:
        args += ["--conversation", conversation]
    env = {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write("".join(t + "\n" for t in turns))
    proc.stdin.close()
    return proc


def _wait_for_growth(db: Path, conversation: str, count: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if len(_committed(db, conversation)) > count:
            return
        time.sleep(0.02)


def _assert_files_read(home: Path) -> None:
    journals = list((home / "data" / "work").glob("*/*/journal.jsonl"))
    for path in journals:
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        for line in lines[:-1]:  # only the last line may be torn
            assert isinstance(json.loads(line), dict), path
        Journal(path).read()
    memory = home / "data" / "memory"
    for name in (".pending-memory.json", ".reflected-conversations.json"):
        if (memory / name).exists():
            json.loads((memory / name).read_text(encoding="utf-8"))
    MemoryService.for_paths(BrimPaths.resolve(home)).pending()


@pytest.mark.slow
def test_a_run_killed_at_random_moments_keeps_every_committed_message_and_readable_files(
    tmp_path: Path,
):
    rng = random.Random(7)
    home = tmp_path / "home"
    db = home / "data" / "brim.sqlite3"
    model = FakeModel(extract=saving(Save(PREF, "spelling", "The user prefers British spelling.")))
    with FakeLlamaServer(n_ctx=WINDOW, token_delay=0.004) as fake:
        # A client killed while sending its request leaves the fake an empty body.
        fake.responder = lambda r: model(r) if isinstance(r.body, dict) else Reply()
        first = _start(home, fake.url, None, [f"Hello. {PREF}"])
        assert first.wait(60) == 0
        (conversation,) = sqlite3.connect(db).execute("SELECT id FROM conversations").fetchone()
        committed = _committed(db, conversation)
        killed_mid_turn = kills = n = 0
        # Kill until enough kills landed and compaction ran at least twice among them: on a
        # loaded machine many kills land before a run sends anything, so the count of runs
        # alone does not say how far the conversation grew.
        while (kills < KILLS or len(model.seen.get("summarizer", [])) < 2) and n < MAX_RUNS:
            n += 1
            turns = [f"Turn {n}.{i}: {FILLER}" for i in range(3)]
            if n % 4 == 0:
                turns[0] = f"Turn {n}: {PREF} {FILLER}"
            proc = _start(home, fake.url, conversation, turns)
            if n % 3 == 0:
                # Every third kill waits for this run's first commit, however slow the
                # machine is to start Python, so that many kills land mid-turn.
                _wait_for_growth(db, conversation, len(committed), proc)
                time.sleep(rng.uniform(0.0, 0.6))
            else:
                time.sleep(rng.uniform(0.15, 1.4))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(30)
            assert _integrity(db) == "ok", f"after kill {n}"
            now = _committed(db, conversation)
            assert committed <= now, f"kill {n} lost {sorted(committed - now)[:3]}"
            killed_mid_turn += len(now) > len(committed) and proc.returncode == -signal.SIGKILL
            committed = now
            _assert_files_read(home)
        # A last run, left alone, resumes the conversation and finishes cleanly.
        last = _start(home, fake.url, conversation, ["Are you still there?"])
        assert last.wait(60) == 0
        summaries = len(model.seen.get("summarizer", []))
        extractions = len(model.seen.get("extractor", []))
    assert _integrity(db) == "ok"
    assert committed <= _committed(db, conversation)
    _assert_files_read(home)
    assert kills >= KILLS
    assert killed_mid_turn >= 10  # most kills landed after something was committed
    assert summaries >= 2 and extractions >= 1  # compaction and memory really ran
    assert MemoryService.for_paths(BrimPaths.resolve(home)).pending()  # the suggestion
