"""search_files: a regular-expression (or literal) search through the workspace's text files.

Pure Python, so it behaves the same on every machine without ripgrep. Every dimension is
bounded (matches, files visited, file size, line length shown, wall time), and the result
says which bound it hit, so the model narrows the search instead of trusting a silently
partial answer. Version-control folders and the usual dependency and cache folders are not
walked into (they can still be searched by naming them as `path`); binary files are skipped,
and so are symlinks that lead outside the workspace.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.tools.context import ToolContext
from engine.tools.errors import ToolArgumentError, ToolError
from engine.tools.registry import Tool
from engine.tools.textfiles import SNIFF_BYTES, human_size, looks_binary
from engine.tools.workspace import display_path, resolve_inside, workspace_root

NAME = "search_files"
MAX_MATCHES = 200
MAX_FILES = 20_000
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_SHOWN_LINE_CHARS = 300
MAX_PATTERN_CHARS = 1_000
DEADLINE_S = 20.0
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)

DESCRIPTION = (
    "Search the text files in the workspace for a regular expression (Python syntax) or, "
    "with literal=true, a plain string. Returns matching lines as path:line: text, at most "
    f"{MAX_MATCHES} matches. `path` limits the search to a folder or one file; `glob` to "
    "file names or paths matching a pattern such as *.py or src/*.ts. Binary files, files "
    f"over {human_size(MAX_FILE_BYTES)}, and folders such as .git, node_modules and .venv "
    "are skipped unless named as `path`."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Regular expression (or plain text with literal=true) to find.",
        },
        "path": {
            "type": "string",
            "description": "Folder or file to search, relative to the workspace. Default: all.",
        },
        "glob": {
            "type": "string",
            "description": "Only files whose name (or, with a /, relative path) matches, "
            "e.g. *.py or tests/*.py.",
        },
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as plain text, not a regular expression.",
        },
        "ignore_case": {"type": "boolean", "description": "Match regardless of case."},
    },
    "required": ["pattern"],
}


@dataclass
class _Tally:
    files: int = 0
    matched_files: int = 0
    binary: int = 0
    large: int = 0
    outside: int = 0
    stopped: str = ""  # why the walk ended early, when it did


def _compile(pattern: str, literal: bool, ignore_case: bool) -> re.Pattern[str]:
    if not pattern:
        raise ToolArgumentError("pattern must not be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolArgumentError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        return re.compile(re.escape(pattern) if literal else pattern, flags)
    except re.error as exc:
        raise ToolArgumentError(
            f"pattern is not a valid regular expression ({exc}); pass literal=true to search "
            "for it as plain text"
        ) from exc


def _wanted(rel: str, name: str, glob: str | None) -> bool:
    if not glob:
        return True
    return fnmatch.fnmatchcase(rel if "/" in glob else name, glob)


def _files(start: Path) -> Iterator[Path]:
    """Every file under `start`, in a stable order, without walking into skipped folders or
    following folder symlinks."""
    if not start.is_dir():
        yield start
        return
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            yield Path(folder) / name


def _shown(line: str) -> str:
    line = line.rstrip("\r")
    if len(line) > MAX_SHOWN_LINE_CHARS:
        return line[:MAX_SHOWN_LINE_CHARS] + " …"
    return line


def search(
    workspace: Path,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    literal: bool = False,
    ignore_case: bool = False,
) -> str:
    """The text search_files returns (blocking; the tool runs it in a thread)."""
    rx = _compile(pattern, literal, ignore_case)
    start = resolve_inside(workspace, path)
    shown_start = display_path(workspace, start)
    if not start.exists():
        raise ToolError(f"{shown_start}: no such file or folder")
    root = workspace_root(workspace)
    deadline = time.monotonic() + DEADLINE_S
    tally = _Tally()
    hits: list[str] = []
    for file in _files(start):
        if tally.files >= MAX_FILES:
            tally.stopped = f"stopped after {MAX_FILES:,} files"
            break
        if time.monotonic() > deadline:
            tally.stopped = f"stopped after {DEADLINE_S:g} seconds"
            break
        real = Path(os.path.realpath(file))
        if real != root and not real.is_relative_to(root):
            tally.outside += 1
            continue
        if not real.is_file():
            continue
        rel = display_path(workspace, file)
        if not _wanted(rel, file.name, glob):
            continue
        tally.files += 1
        try:
            if real.stat().st_size > MAX_FILE_BYTES:
                tally.large += 1
                continue
            data = real.read_bytes()
        except OSError:
            continue
        if looks_binary(data[:SNIFF_BYTES]):
            tally.binary += 1
            continue
        found = False
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
            if rx.search(line):
                found = True
                hits.append(f"{rel}:{number}: {_shown(line)}")
                if len(hits) >= MAX_MATCHES:
                    tally.stopped = f"stopped at {MAX_MATCHES} matches"
                    break
        tally.matched_files += int(found)
        if tally.stopped:
            break
    return _report(pattern, shown_start, hits, tally)


def _report(pattern: str, where: str, hits: list[str], tally: _Tally) -> str:
    notes: list[str] = []
    if tally.stopped:
        notes.append(f"[Search {tally.stopped}; narrow the pattern, path or glob for the rest.]")
    skipped = []
    if tally.binary:
        skipped.append(f"{tally.binary} binary")
    if tally.large:
        skipped.append(f"{tally.large} over {human_size(MAX_FILE_BYTES)}")
    if tally.outside:
        skipped.append(f"{tally.outside} linked outside the workspace")
    if skipped:
        notes.append(f"[Skipped files: {', '.join(skipped)}.]")
    if not hits:
        head = f"No matches for {pattern!r} in {where} ({tally.files:,} files searched)."
        return "\n".join([head, *notes])
    n = len(hits)
    head = (
        f"{n} {'match' if n == 1 else 'matches'} for {pattern!r} in {tally.matched_files} "
        f"{'file' if tally.matched_files == 1 else 'files'} under {where}:"
    )
    return "\n".join([head, *hits, *notes])


async def search_files(args: dict[str, Any], ctx: ToolContext) -> str:
    return await asyncio.to_thread(
        search,
        ctx.workspace,
        args["pattern"],
        args.get("path") or ".",
        args.get("glob") or None,
        bool(args.get("literal", False)),
        bool(args.get("ignore_case", False)),
    )


TOOL = Tool(
    name=NAME,
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=search_files,
    aliases={"regex": "pattern", "query": "pattern", "directory": "path"},
)
