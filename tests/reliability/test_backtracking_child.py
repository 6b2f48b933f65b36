"""A backtracking search never outlives Brim.

search_files runs a look-around pattern in a child process (engine/tools/backtracking.py).
A pattern such as `(?=a)(a+)+$` on a line of a's and a `!` matches for longer than anyone
waits. Before, the child was stopped only by its 20 s deadline: SIGTERM to Brim waited for
it, and a Brim killed outright left it matching for ever. Now it dies with Brim.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall
from tests.reliability.headless import Headless

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="processes are found through /proc"
)

ATTACK = "a" * 40 + "!"
PATTERN = "(?=a)(a+)+$"


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the name (state first); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie is dead, only not yet reaped


def _runners(parent: int) -> list[int]:
    """The pattern runners `parent` started (children running search_tool)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if fields and fields[1] == str(parent) and b"search_tool" in argv:
            found.append(int(entry.name))
    return found


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _searching(tmp_path: Path, fake: FakeLlamaServer) -> tuple[Headless, int]:
    """A headless Brim whose model asked for the endless search, and the runner's pid."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "trap.txt").write_text(f"{ATTACK}\n", encoding="utf-8")
    fake.script_reply(tool_calls=[FakeToolCall("search_files", {"pattern": PATTERN})])
    flags = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
    brim = Headless(tmp_path / "home", [*flags, "--workspace", str(workspace)])
    brim.ready(timeout=60)
    assert brim.proc.stdin is not None
    brim.proc.stdin.write("search the workspace\n")
    brim.proc.stdin.flush()
    brim.until(("tool_call",), timeout=60)
    assert _wait_for(lambda: _runners(brim.proc.pid), 20), "the pattern runner never started"
    (child,) = _runners(brim.proc.pid)
    return brim, child


def test_a_killed_brim_leaves_no_backtracking_search_behind(tmp_path: Path):
    with FakeLlamaServer(n_ctx=8192) as fake:
        brim, child = _searching(tmp_path, fake)
        pid = brim.proc.pid
        try:
            time.sleep(0.5)  # matching, deep in C code
            assert _alive(child)
            os.kill(pid, signal.SIGKILL)
            brim.proc.wait(10)
            _wait_for(lambda: not _alive(child), 5)
            left = int(_alive(child))
        finally:
            if _alive(child):  # never leave one running, even when the test fails
                os.kill(child, signal.SIGKILL)
            brim.close()
    print(f"\nchildren left after SIGKILL: {left}")
    assert left == 0


def test_sigterm_ends_brim_during_a_backtracking_search_at_once(tmp_path: Path):
    with FakeLlamaServer(n_ctx=8192) as fake:
        brim, child = _searching(tmp_path, fake)
        try:
            time.sleep(0.5)
            started = time.monotonic()
            brim.proc.send_signal(signal.SIGTERM)
            _wait_for(lambda: not _alive(child), 10)
            child_s = time.monotonic() - started
            code = brim.proc.wait(30)
            exit_s = time.monotonic() - started
        finally:
            if _alive(child):
                os.kill(child, signal.SIGKILL)
            brim.close()
    print(
        f"\nSIGTERM during a backtracking search: the search ended after {child_s:.2f} s, "
        f"brim exited {code} after {exit_s:.2f} s"
    )
    assert child_s < 1.0, f"the search went on for {child_s:.1f} s after SIGTERM"
    assert code == 143
    # Far below the runner's 20 s deadline, which the old code waited for (the rest is the
    # interpreter's own shutdown, some seconds on a loaded machine).
    assert exit_s < 8.0, f"SIGTERM took {exit_s:.1f} s"
