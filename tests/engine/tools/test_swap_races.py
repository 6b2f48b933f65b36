"""A file or folder swapped for a symlink between the tools' check and their open.

The tools check a path and then use it; a concurrent process (a hostile script the model
ran earlier, a sync client) can put a link to `~/.ssh` in its place in between. Two kinds
of test: the swap made exactly inside that window (deterministic), and a real racing
process swapping as fast as it can while the tools are called until the race has been run
both ways (calls got through, and calls met a link swapped in after their check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.tools import ToolError, list_tool, read_tool
from engine.tools.anchored import ANCHORED
from engine.tools.list_tool import list_folder
from engine.tools.read_tool import read_page
from engine.tools.search_tool import search

pytestmark = pytest.mark.skipif(not ANCHORED, reason="needs dir_fd opens (POSIX)")

SECRET = "the secret"


def _swap_for_link(path: Path, target: Path) -> None:
    """Atomically put a symlink to `target` where `path` is (a file or a folder)."""
    tmp = path.with_name(path.name + ".swap")
    tmp.symlink_to(target, target_is_directory=target.is_dir())
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".was"))
    os.replace(tmp, path)


def test_a_file_swapped_for_a_link_right_after_the_check_is_not_read(
    workspace: Path, outside: Path, monkeypatch
):
    note = workspace / "note.txt"
    note.write_text("harmless\n", encoding="utf-8")
    checked = read_tool.resolve_inside

    def check_then_swap(ws: Path, raw: str) -> Path:
        real = checked(ws, raw)
        _swap_for_link(note, outside / "secret.txt")
        return real

    monkeypatch.setattr(read_tool, "resolve_inside", check_then_swap)
    with pytest.raises(ToolError, match="became a symbolic link") as caught:
        read_page(workspace, "note.txt")
    assert SECRET not in str(caught.value)


def test_a_parent_folder_swapped_for_a_link_right_after_the_check_is_not_read(
    workspace: Path, outside: Path, monkeypatch
):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "secret.txt").write_text("harmless\n", encoding="utf-8")
    checked = read_tool.resolve_inside

    def check_then_swap(ws: Path, raw: str) -> Path:
        real = checked(ws, raw)
        _swap_for_link(workspace / "docs", outside)
        return real

    monkeypatch.setattr(read_tool, "resolve_inside", check_then_swap)
    with pytest.raises(ToolError, match="became a symbolic link") as caught:
        read_page(workspace, "docs/secret.txt")
    assert SECRET not in str(caught.value)


def test_a_folder_swapped_for_a_link_right_after_the_check_is_not_listed(
    workspace: Path, outside: Path, monkeypatch
):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "readme.txt").write_text("harmless\n", encoding="utf-8")
    checked = list_tool.resolve_inside

    def check_then_swap(ws: Path, raw: str) -> Path:
        real = checked(ws, raw)
        _swap_for_link(workspace / "docs", outside)
        return real

    monkeypatch.setattr(list_tool, "resolve_inside", check_then_swap)
    with pytest.raises(ToolError, match="became a symbolic link") as caught:
        list_folder(workspace, "docs")
    assert "secret.txt" not in str(caught.value)


RACER = textwrap.dedent(
    """
    import os, sys, time
    path, target, stop, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    real, link = path + ".real", path + ".link"
    os.rename(path, real)
    os.symlink(target, link)
    end = time.monotonic() + seconds
    swaps = 0
    while time.monotonic() < end and not os.path.exists(stop):
        # `path` is the real file or folder, then a link leading outside, and so on.
        try:
            os.rename(real, path)
            os.rename(path, real)
            os.rename(link, path)
            os.rename(path, link)
        except OSError:
            # A write under test made a folder at `path` while it was free (it creates the
            # folders it needs): move that one aside, so the swapping goes on.
            if os.path.isdir(path) and not os.path.islink(path) and os.path.lexists(real):
                os.rename(path, f"{path}.made-{swaps}")
        swaps += 1
        if swaps == 1:
            open(stop + ".started", "w").close()
    print(swaps)
    """
)


@pytest.fixture
def racer(tmp_path: Path) -> Iterator:
    """Start a process that keeps swapping `path` for a link to `target` (bounded)."""
    procs: list[subprocess.Popen[str]] = []
    stop = tmp_path / "stop-racing"

    def start(path: Path, target: Path) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-c", RACER, str(path), str(target), str(stop), str(2 * RACE_S)],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        deadline = time.monotonic() + 60  # a Python start on a busy machine
        while not Path(str(stop) + ".started").exists():
            assert proc.poll() is None, "the racing process died"
            assert time.monotonic() < deadline, "the racing process never started"
            time.sleep(0.01)

    yield start
    stop.touch()
    for proc in procs:
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert int(out) > 0


# A racing test calls a tool until the race has really been run both ways: WANTED calls got
# through to the file inside, and WANTED calls met a link that was swapped in after their
# check (the window these tests are about) and were refused. Not a fixed number of calls:
# on a busy machine a few hundred calls take a few scheduler slices, in which the racing
# process may not run at all, so a fixed count could see neither. A call that escapes ends
# the loop at once; RACE_S bounds a race that never happens.
RACE_S = 120.0
WANTED = 20
CAUGHT = "became a symbolic link"


@dataclass
class Race:
    through: int = 0  # calls that read, listed or wrote what is inside
    caught: int = 0  # calls refused because a link appeared after the check
    calls: int = 0
    escapes: list[str] = field(default_factory=list)  # results that show what is outside

    @property
    def ran_both_ways(self) -> bool:
        return self.through >= WANTED and self.caught >= WANTED


def _call(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except ToolError as exc:
        return f"error: {exc}"


def _race(call: Callable[[], str], *, inside: str, outside: str) -> Race:
    """Call `call` (under a racing process) until the race ran both ways, an escape was seen
    (a result holding `outside`), or RACE_S passed; `inside` marks a call that got through."""
    race = Race()
    deadline = time.monotonic() + RACE_S
    while not race.ran_both_ways and time.monotonic() < deadline:
        text = _call(call)
        race.calls += 1
        if outside in text:
            race.escapes.append(text)
            break
        if inside in text:
            race.through += 1
        elif CAUGHT in text:
            race.caught += 1
    return race


def _assert_held(race: Race) -> None:
    assert race.escapes == []
    # The premise: the race really let calls through and really hit the window.
    assert race.ran_both_ways, race


def test_a_racing_process_swapping_a_file_for_a_link_never_gets_it_read(
    workspace: Path, outside: Path, racer
):
    (workspace / "note.txt").write_text("harmless\n", encoding="utf-8")
    racer(workspace / "note.txt", outside / "secret.txt")
    _assert_held(_race(lambda: read_page(workspace, "note.txt"), inside="harmless", outside=SECRET))


# Each tool in a folder swapped for a link: its call, what marks a call that got through to
# the folder inside, and what marks one that reached the folder outside. Outside, the folder
# holds outside-only.txt too, and its secret.txt says "the secret" (inside: "harmless").
FOLDER_CALLS: dict[str, tuple[Callable[[Path], str], str, str]] = {
    "read": (lambda ws: read_page(ws, "docs/secret.txt"), "harmless", SECRET),
    "list": (lambda ws: list_folder(ws, "docs"), "Folder: docs", "outside-only.txt"),
    # A hit line, not the pattern echoed in the result's head.
    "search": (lambda ws: search(ws, "harmless|secret", path="docs"), ":1: harmless", SECRET),
}


@pytest.mark.parametrize("tool", list(FOLDER_CALLS))
def test_a_racing_process_swapping_a_folder_never_gets_outside_read_or_listed(
    workspace: Path, outside: Path, racer, tool: str
):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "secret.txt").write_text("harmless\n", encoding="utf-8")
    racer(workspace / "docs", outside)
    call, inside, escaped = FOLDER_CALLS[tool]
    _assert_held(_race(lambda: call(workspace), inside=inside, outside=escaped))


def test_a_racing_process_never_redirects_a_write_outside(
    workspace: Path, outside: Path, racer, make_ctx, registry
):
    import asyncio

    (workspace / "out").mkdir()
    racer(workspace / "out", outside)
    there = sorted(os.listdir(outside))
    ctx = make_ctx()
    calls = iter(range(10**9))

    def write() -> str:
        i = next(calls)
        args = {"path": f"out/w{i}.txt", "content": "pwned\n"}
        outcome = asyncio.run(registry.call("write_file", json.dumps(args), ctx, call_id=f"c{i}"))
        # A write that left lands outside: say so in the result the race looks at.
        return outcome.content + ("ESCAPED" if sorted(os.listdir(outside)) != there else "")

    race = _race(write, inside="Wrote out/", outside="ESCAPED")
    _assert_held(race)
    assert sorted(os.listdir(outside)) == ["outside-only.txt", "secret.txt"]


@pytest.fixture(autouse=True)
def _outside_marker(outside: Path) -> None:
    (outside / "outside-only.txt").write_text("x\n", encoding="utf-8")
