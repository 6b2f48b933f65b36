"""A file or folder swapped for a symlink between the tools' check and their open.

The tools check a path and then use it; a concurrent process (a hostile script the model
ran earlier, a sync client) can put a link to `~/.ssh` in its place in between. Two kinds
of test: the swap made exactly inside that window (deterministic), and a real racing
process swapping as fast as it can while the tools are called hundreds of times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.tools import ToolError, list_tool, read_tool
from engine.tools.anchored import ANCHORED
from engine.tools.list_tool import list_folder
from engine.tools.read_tool import read_page
from engine.tools.search_tool import search

pytestmark = pytest.mark.skipif(not ANCHORED, reason="needs dir_fd opens (POSIX)")

SECRET = "the secret"
CALLS = 300


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
            pass  # a write under test may have made a folder at `path` meanwhile
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
            [sys.executable, "-c", RACER, str(path), str(target), str(stop), "60"],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        deadline = time.monotonic() + 20
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


def _escapes(results: list[str], needle: str) -> int:
    return sum(needle in text for text in results)


def _call(fn, *args, **kwargs) -> str:
    try:
        return fn(*args, **kwargs)
    except ToolError as exc:
        return f"error: {exc}"


def test_a_racing_process_swapping_a_file_for_a_link_never_gets_it_read(
    workspace: Path, outside: Path, racer
):
    (workspace / "note.txt").write_text("harmless\n", encoding="utf-8")
    racer(workspace / "note.txt", outside / "secret.txt")
    results = [_call(read_page, workspace, "note.txt") for _ in range(CALLS)]
    assert _escapes(results, SECRET) == 0
    assert any("harmless" in r for r in results)  # the race really let some reads through


def test_a_racing_process_swapping_a_folder_never_gets_outside_read_or_listed(
    workspace: Path, outside: Path, racer
):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "secret.txt").write_text("harmless\n", encoding="utf-8")
    racer(workspace / "docs", outside)
    reads = [_call(read_page, workspace, "docs/secret.txt") for _ in range(CALLS)]
    listings = [_call(list_folder, workspace, "docs") for _ in range(CALLS)]
    searches = [_call(search, workspace, "secret", path="docs") for _ in range(CALLS // 3)]
    assert _escapes(reads, SECRET) == 0
    assert _escapes(searches, SECRET) == 0
    # Outside, the folder holds only secret.txt; inside it holds secret.txt too, so a
    # listing escaped when it shows the outside folder's marker file.
    assert _escapes(listings, "outside-only.txt") == 0


def test_a_racing_process_never_redirects_a_write_outside(
    workspace: Path, outside: Path, racer, make_ctx, registry
):
    import asyncio

    (workspace / "out").mkdir()
    racer(workspace / "out", outside)

    async def writes() -> None:
        ctx = make_ctx()
        for i in range(CALLS // 3):
            args = {"path": f"out/w{i}.txt", "content": "pwned\n"}
            await registry.call("write_file", json.dumps(args), ctx, call_id=f"c{i}")

    asyncio.run(writes())
    assert sorted(os.listdir(outside)) == ["outside-only.txt", "secret.txt"]


@pytest.fixture(autouse=True)
def _outside_marker(outside: Path) -> None:
    (outside / "outside-only.txt").write_text("x\n", encoding="utf-8")
