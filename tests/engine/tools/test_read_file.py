"""read_file: numbered pages of text, honest about encodings, bounded on any file."""

from __future__ import annotations

import contextlib
import os
import re
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.tools import ToolError, read_tool
from engine.tools.read_tool import read_page

pytestmark = pytest.mark.anyio


@dataclass
class Peak:
    bytes: int = 0


@contextlib.contextmanager
def measured_peak() -> Iterator[Peak]:
    """The most memory Python allocated inside the block, above what it held before."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    peak = Peak()
    try:
        yield peak
        peak.bytes = tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()


def write_lines(path: Path, n: int, width: int = 0) -> None:
    path.write_text("".join(f"line {i}{'x' * width}\n" for i in range(1, n + 1)), encoding="utf-8")


def test_a_small_file_comes_back_whole_with_line_numbers(workspace: Path):
    (workspace / "hello.py").write_text("print('hi')\n\tindented  \n", encoding="utf-8")
    text = read_page(workspace, "hello.py")
    assert text.splitlines() == [
        "File: hello.py (lines 1-2 of 2; 24 B)",
        "     1\tprint('hi')",
        "     2\t\tindented  ",
    ]


def test_offset_and_limit_choose_the_window_and_the_result_says_where_to_go_on(workspace: Path):
    write_lines(workspace / "log.txt", 50)
    text = read_page(workspace, "log.txt", offset=10, limit=5)
    lines = text.splitlines()
    assert lines[0].startswith("File: log.txt (lines 10-14 of 50;")
    assert lines[1:6] == [f"{n:>6}\tline {n}" for n in range(10, 15)]
    assert lines[-1] == "[The file goes on: call read_file with offset=15 to read more.]"


def test_the_last_page_has_no_go_on_line(workspace: Path):
    write_lines(workspace / "log.txt", 20)
    text = read_page(workspace, "log.txt", offset=15, limit=100)
    assert "goes on" not in text
    assert text.splitlines()[-1] == "    20\tline 20"


def test_an_offset_past_the_end_says_how_long_the_file_is(workspace: Path):
    write_lines(workspace / "short.txt", 3)
    with pytest.raises(ToolError, match=re.escape("has 3 lines; offset 10 is past the end")):
        read_page(workspace, "short.txt", offset=10)


def test_a_page_stops_at_the_character_budget_and_never_splits_a_line(workspace: Path):
    write_lines(workspace / "wide.txt", 100, width=90)
    text = read_page(workspace, "wide.txt", page_chars=1_000)
    body = [line for line in text.splitlines() if "\t" in line]
    assert 5 <= len(body) <= 11
    assert all(line.endswith("x" * 90) for line in body)
    assert f"offset={len(body) + 1}" in text.splitlines()[-1]


def test_invalid_utf8_is_shown_as_replacement_characters_and_said_so(workspace: Path):
    (workspace / "latin1.csv").write_bytes("name;city\nJosé;Zürich\n".encode("latin-1"))
    text = read_page(workspace, "latin1.csv")
    assert "not valid UTF-8" in text
    assert "Jos\ufffd;Z\ufffdrich" in text


def test_valid_utf8_carries_no_encoding_note(workspace: Path):
    (workspace / "u.txt").write_text("José → Zürich ✓\n", encoding="utf-8")
    text = read_page(workspace, "u.txt")
    assert "not valid UTF-8" not in text and "José → Zürich ✓" in text


def test_a_utf8_byte_order_mark_is_not_shown(workspace: Path):
    (workspace / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    assert read_page(workspace, "bom.txt").splitlines()[1] == "     1\thello"


def test_utf16_text_with_a_byte_order_mark_is_read_as_text(workspace: Path):
    (workspace / "ps.txt").write_text("first\r\nsecond\r\n", encoding="utf-16")
    text = read_page(workspace, "ps.txt")
    assert "UTF-16" in text.splitlines()[0]
    assert text.splitlines()[1:] == ["     1\tfirst", "     2\tsecond"]


def test_a_binary_file_is_refused_with_a_clear_message(workspace: Path):
    (workspace / "app.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    with pytest.raises(ToolError, match=re.escape("app.bin is a binary file")):
        read_page(workspace, "app.bin")


def test_a_folder_a_missing_file_and_a_fifo_are_each_refused_by_name(workspace: Path):
    (workspace / "src").mkdir()
    with pytest.raises(ToolError, match=re.escape("src is a folder; use list_directory")):
        read_page(workspace, "src")
    with pytest.raises(ToolError, match=re.escape("nope.txt: no such file")):
        read_page(workspace, "nope.txt")
    fifo = workspace / "pipe"
    if not hasattr(os, "mkfifo"):
        return
    os.mkfifo(fifo)
    with pytest.raises(ToolError, match=re.escape("not a regular file")):
        read_page(workspace, "pipe")


def test_an_empty_file_says_it_is_empty(workspace: Path):
    (workspace / "empty.txt").write_bytes(b"")
    assert read_page(workspace, "empty.txt") == "File: empty.txt (empty, 0 bytes)"


def test_a_huge_single_line_is_cut_and_costs_no_more_memory_than_a_page(workspace: Path):
    path = workspace / "minified.js"
    with open(path, "wb") as handle:
        for _ in range(40):
            handle.write(b"a" * (1 << 20))  # 40 MiB on one line
        handle.write(b"\nsecond line\n")
    with measured_peak() as peak:
        text = read_page(workspace, "minified.js")
    lines = text.splitlines()
    assert lines[1].startswith("     1\t" + "a" * 100)
    assert lines[1].endswith(f"[line cut: {40 * (1 << 20) - 2000:,} more bytes]")
    assert lines[2] == "     2\tsecond line"
    assert peak.bytes < 4 * (1 << 20)


def test_a_multi_gigabyte_file_is_paged_without_being_loaded(workspace: Path):
    path = workspace / "huge.log"
    with open(path, "wb") as handle:
        handle.write(b"".join(b"event %d\n" % i for i in range(1, 1001)))
        handle.truncate(3 * (1 << 30))  # a sparse 3 GiB file
    with measured_peak() as peak:
        text = read_page(workspace, "huge.log", limit=10)
    lines = text.splitlines()
    assert lines[0] == "File: huge.log (lines 1-10; 3.0 GB)"  # not counted to the end
    assert lines[10] == "    10\tevent 10"
    assert lines[-1] == "[The file goes on: call read_file with offset=11 to read more.]"
    assert peak.bytes < 4 * (1 << 20)


def test_reading_never_scans_further_than_its_cap(workspace: Path, monkeypatch):
    monkeypatch.setattr(read_tool, "MAX_SCAN_BYTES", 1 << 20)
    path = workspace / "sparse.log"
    with open(path, "wb") as handle:
        handle.write(b"head 1\nhead 2\n")
        handle.write(b"z" * (4 << 20))  # one line longer than the cap
    text = read_page(workspace, "sparse.log")
    assert text.splitlines()[1:3] == ["     1\thead 1", "     2\thead 2"]
    assert "line 3 is longer than 1.0 MB" in text
    assert "run_command" in text.splitlines()[-1]
    write_lines(workspace / "long.log", 200_000)
    with pytest.raises(ToolError, match=re.escape("lies beyond the first 1.0 MB")):
        read_page(workspace, "long.log", offset=190_000)


async def test_the_tool_sizes_its_page_to_the_result_budget(make_ctx, registry, workspace):
    write_lines(workspace / "big.txt", 5_000, width=40)
    ctx = make_ctx(result_budget_chars=4_000)
    outcome = await registry.call("read_file", {"path": "big.txt"}, ctx, call_id="r1")
    assert not outcome.truncated and not outcome.is_error
    assert len(outcome.content) <= 4_000
    assert "call read_file with offset=" in outcome.content


async def test_models_that_say_file_path_and_send_numbers_as_text_are_understood(
    make_ctx, registry, workspace
):
    write_lines(workspace / "a.txt", 10)
    args = '{"file_path": "a.txt", "offset": "3", "limit": 2.0}'
    outcome = await registry.call("read_file", args, make_ctx())
    assert not outcome.is_error, outcome.content
    assert "lines 3-4 of 10" in outcome.content
