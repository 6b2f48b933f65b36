"""Ctrl+C and SIGTERM end a headless chat with the exit code the README promises (130, 143),
also while stdin is still open: before the first line, after an answer, or mid-answer.

Before the fix the process aborted (SIGABRT, `Fatal Python error: _enter_buffered_busy`) in
20 of 20 tries: the thread reading stdin held the buffered reader's lock while the
interpreter, shutting down, tried to take it. Each case runs 20 real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.fake_engines import FakeLlamaServer, Reply

TRIES = 20
AT_ONCE = 8  # processes alive together (the machine is small)
STORY = " ".join(f"word{i}" for i in range(300))
MOMENTS = ("idle", "answered", "mid_answer")
BRIM = (sys.executable, "-m", "engine.cli")
ENGINE = ("--provider", "llamacpp", "--base-url")


@dataclass
class Ending:
    moment: str
    returncode: int
    stderr: str


def _events_until(proc: subprocess.Popen[bytes], done: str) -> None:
    """Read stdout until an event of type `done` (a `ready` state for "state")."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, f"brim ended early: {proc.wait(10)}"
        event = json.loads(line)
        if event["type"] == done and (done != "state" or event["state"] == "ready"):
            return


def _one_try(home: Path, url: str, sig: signal.Signals, moment: str) -> Ending:
    env = {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}
    proc = subprocess.Popen(
        [*BRIM, "--data-dir", str(home), "chat", "--headless", *ENGINE, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    try:
        _events_until(proc, "state")  # started: its signal handlers are in place
        if moment != "idle":
            line = b"tell me a story\n" if moment == "mid_answer" else b"hello\n"
            proc.stdin.write(line)
            proc.stdin.flush()
            _events_until(proc, "turn_end" if moment == "answered" else "delta")
        proc.send_signal(sig)  # stdin stays open until the process has ended
        returncode = proc.wait(timeout=60)
        return Ending(moment, returncode, proc.stderr.read().decode(errors="replace"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "ctrl_c"]
)
def test_a_signal_with_stdin_still_open_exits_with_its_code_every_time(
    tmp_path: Path, sig: signal.Signals, code: int
):
    fake = FakeLlamaServer(n_ctx=4096, slots=4)
    # A story is long and slow enough to be still streaming when the signal lands.
    fake.responder = lambda request: (
        Reply(text=STORY, token_delay=0.02) if "story" in json.dumps(request.body) else Reply()
    )
    with fake, ThreadPoolExecutor(AT_ONCE) as pool:
        endings = list(
            pool.map(
                lambda n: _one_try(tmp_path / f"home{n}", fake.url, sig, MOMENTS[n % 3]),
                range(TRIES),
            )
        )
    wrong = [(e.moment, e.returncode, e.stderr[-300:]) for e in endings if e.returncode != code]
    assert not wrong, f"{len(wrong)} of {TRIES} tries did not exit {code}: {wrong[:3]}"
    assert not [e for e in endings if "Fatal Python error" in e.stderr or "Traceback" in e.stderr]
