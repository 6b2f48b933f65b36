"""read_file: a numbered window of a text file in the workspace.

The model pages through a file by line (`offset`, `limit`); a page is sized to fit the
result budget, so a long file is read with read_file itself rather than cut and stored. The
file is streamed line by line with a bound on each line, so a multi-gigabyte log or a
single line of megabytes costs a page, not the file. Bytes that are not UTF-8 are shown as
U+FFFD and the header says so, so the model does not "fix" characters it never saw.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from engine.tools.anchored import open_file
from engine.tools.context import ToolContext
from engine.tools.errors import ToolArgumentError, ToolError
from engine.tools.registry import Tool
from engine.tools.textfiles import SNIFF_BYTES, human_size, looks_binary, wide_encoding
from engine.tools.workspace import display_path, resolve_inside

NAME = "read_file"
DEFAULT_LINES = 400
MAX_LINES = 2_000
MAX_LINE_CHARS = 2_000
# One physical read per line is capped here; the rest of a longer line is skipped in
# chunks of the same size, never held.
LINE_READ_BYTES = 16_384
# Room a page leaves in the result budget for its header and footer.
PAGE_FRAME_CHARS = 400
MIN_PAGE_CHARS = 200
# Files up to this size get an exact line count in the header; larger ones are not
# scanned to the end just to count.
COUNT_LINES_MAX_BYTES = 8 * 1024 * 1024
WIDE_MAX_BYTES = 4 * 1024 * 1024
# One call never scans further into a file than this (to skip to a far offset, or past one
# enormous line): a multi-gigabyte file costs a bounded read, and the model is told to use
# run_command for what lies beyond.
MAX_SCAN_BYTES = 256 * 1024 * 1024

DESCRIPTION = (
    "Read a text file in the workspace. Returns numbered lines (line number, a tab, the "
    "text) starting at `offset` (1-based line number, default 1), at most `limit` lines "
    f"(default {DEFAULT_LINES}); a long file is returned a page at a time and the result "
    "says which offset to read next. Binary files are refused. Bytes that are not UTF-8 "
    "are shown as \ufffd and the result says so."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File path, relative to the workspace (or absolute inside it).",
        },
        "offset": {
            "type": "integer",
            "description": "First line to return, counting from 1. Default 1.",
        },
        "limit": {
            "type": "integer",
            "description": f"Most lines to return (default {DEFAULT_LINES}, at most {MAX_LINES}).",
        },
    },
    "required": ["path"],
}


def _read_line(handle: BinaryIO, stop_at: int) -> tuple[bytes, int, bool] | None:
    """The next line (without its end) up to LINE_READ_BYTES, how many bytes of it were
    skipped beyond that, and whether its end was reached before file position `stop_at`;
    None at the end of the file."""
    chunk = handle.readline(LINE_READ_BYTES)
    if not chunk:
        return None
    skipped = 0
    if not chunk.endswith(b"\n"):
        while True:
            if handle.tell() > stop_at:
                return chunk, skipped, False
            more = handle.readline(LINE_READ_BYTES)
            if not more:
                break
            if more.endswith(b"\n"):
                skipped += len(more) - 1
                break
            skipped += len(more)
    return chunk.rstrip(b"\r\n"), skipped, True


def _decode(raw: bytes, cut: bool) -> tuple[str, bool]:
    """Text of one line and whether it held invalid UTF-8. A line cut mid-character is not
    counted as invalid: its last partial character is simply dropped."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        return decoder.decode(raw, final=not cut), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def _shown_line(number: int, text: str, hidden: int) -> str:
    if len(text) > MAX_LINE_CHARS:
        hidden += len(text[MAX_LINE_CHARS:].encode("utf-8", "replace"))
        text = text[:MAX_LINE_CHARS]
    if hidden:
        text += f" … [line cut: {hidden:,} more bytes]"
    return f"{number:>6}\t{text}"


def _count_rest(handle: BinaryIO) -> int:
    """Lines from the current position to the end, counted in chunks."""
    lines = 0
    tail = b""
    while chunk := handle.read(1 << 20):
        lines += chunk.count(b"\n")
        tail = chunk
    if tail and not tail.endswith(b"\n"):
        lines += 1
    return lines


def _wide_lines(handle: BinaryIO, size: int, encoding: str, shown: str) -> list[str]:
    if size > WIDE_MAX_BYTES:
        raise ToolError(
            f"{shown} is {encoding.upper()} text of {human_size(size)}; only files up to "
            f"{human_size(WIDE_MAX_BYTES)} in that encoding can be read"
        )
    handle.seek(0)
    return handle.read(WIDE_MAX_BYTES + 1).decode(encoding, errors="replace").splitlines()


@dataclass
class _Page:
    """The lines of one page as they are collected."""

    limit: int
    chars: int
    lines: list[str] = field(default_factory=list)
    used: int = 0
    invalid: bool = False  # some line was not valid UTF-8
    more: bool = False  # the file goes on after the page
    stopped: str = ""  # why paging by line stopped before the end, when it did

    def full_before(self, entry: str) -> bool:
        """True when `entry` does not fit; the first line of a page always fits."""
        return len(self.lines) >= self.limit or (
            bool(self.lines) and self.used + len(entry) > self.chars
        )

    def add(self, entry: str) -> None:
        self.lines.append(entry)
        self.used += len(entry) + 1


def _page_wide(page: _Page, lines: list[str], offset: int) -> None:
    for number, text in enumerate(lines[offset - 1 :], start=offset):
        entry = _shown_line(number, text.lstrip("\ufeff"), 0)
        if page.full_before(entry):
            page.more = True
            return
        page.add(entry)


def _page_utf8(page: _Page, handle: BinaryIO, offset: int, size: int) -> int | None:
    """Fill `page` from the current position; returns the file's line count when known."""
    scan_cap = MAX_SCAN_BYTES
    number = 0
    while (line := _read_line(handle, scan_cap)) is not None:
        raw, skipped, whole = line
        number += 1
        if not whole:
            page.stopped = (
                f"line {number:,} is longer than {human_size(scan_cap)}; read_file cannot "
                "page past it"
            )
            page.more = True
            return None
        if number < offset:
            if handle.tell() > scan_cap:
                page.stopped = (
                    f"line {offset:,} lies beyond the first {human_size(scan_cap)} of the "
                    "file, more than read_file scans in one call"
                )
                return None
            continue
        text, bad = _decode(raw, cut=skipped > 0)
        entry = _shown_line(number, text, skipped)
        if page.full_before(entry):
            page.more = True
            return number + _count_rest(handle) if size <= COUNT_LINES_MAX_BYTES else None
        page.invalid = page.invalid or bad
        page.add(entry)
    return number


def read_page(
    workspace: Path,
    path: str,
    offset: int = 1,
    limit: int = DEFAULT_LINES,
    page_chars: int | None = None,
) -> str:
    """The text read_file returns (blocking; the tool runs it in a thread)."""
    if offset < 1:
        raise ToolArgumentError("offset counts lines from 1")
    if limit < 1:
        raise ToolArgumentError("limit must be at least 1")
    chars = sys.maxsize if page_chars is None else max(page_chars, MIN_PAGE_CHARS)
    page = _Page(limit=min(limit, MAX_LINES), chars=chars)
    real = resolve_inside(workspace, path)
    shown = display_path(workspace, real)
    # Opened from the workspace's descriptor without following links, and judged by what
    # was opened: a file swapped for a link after the check above is refused, not followed.
    fd = open_file(workspace, real, shown)
    try:
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return f"File: {shown} (empty, 0 bytes)"
            sample = handle.read(SNIFF_BYTES)
            encoding = wide_encoding(sample)
            if encoding is not None:
                lines = _wide_lines(handle, size, encoding, shown)
                total: int | None = len(lines)
                _page_wide(page, lines, offset)
            elif looks_binary(sample):
                raise ToolError(
                    f"{shown} is a binary file ({human_size(size)}); read_file shows text only"
                )
            else:
                handle.seek(len(codecs.BOM_UTF8) if sample.startswith(codecs.BOM_UTF8) else 0)
                total = _page_utf8(page, handle, offset, size)
    except OSError as exc:
        raise ToolError(f"{shown}: cannot be read ({exc.strerror or exc})") from exc
    if not page.lines:
        if page.stopped:
            raise ToolError(f"{shown}: {page.stopped}. Use run_command (tail, sed, grep) instead.")
        raise ToolError(f"{shown} has {total or 0:,} lines; offset {offset:,} is past the end")
    last = offset + len(page.lines) - 1
    of = f" of {total:,}" if total is not None else ""
    enc = f", {encoding.upper()}" if encoding else ""
    parts = [f"File: {shown} (lines {offset:,}-{last:,}{of}; {human_size(size)}{enc})"]
    if page.invalid:
        parts.append(
            "[Note: this file is not valid UTF-8; bytes that could not be decoded are shown "
            "as \ufffd.]"
        )
    parts.extend(page.lines)
    if page.stopped:
        parts.append(f"[Stopped: {page.stopped}. Use run_command (tail, sed, grep) for the rest.]")
    elif page.more:
        parts.append(f"[The file goes on: call {NAME} with offset={last + 1} to read more.]")
    return "\n".join(parts)


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    page_chars = max(ctx.result_budget_chars - PAGE_FRAME_CHARS, MIN_PAGE_CHARS)
    return await asyncio.to_thread(
        read_page,
        ctx.workspace,
        args["path"],
        args.get("offset", 1),
        args.get("limit", DEFAULT_LINES),
        page_chars,
    )


TOOL = Tool(
    name=NAME,
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=read_file,
    aliases={"file_path": "path", "filename": "path", "file": "path"},
)
