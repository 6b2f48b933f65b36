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
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from engine.tools import anchored
from engine.tools.anchored import ANCHORED
from engine.tools.backtracking import search_in_child
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
# RE2's memory for one pattern's automaton; past it RE2 falls back to a slower but still
# linear-time search rather than failing.
RE2_MAX_MEM = 32 * 1024 * 1024
# The deadline is also checked inside a file, every this many lines.
DEADLINE_EVERY_LINES = 4_096
# A pattern RE2 cannot run goes to a child process, killed when it runs longer than this.
BACKTRACKING_DEADLINE_S = 20.0
Matcher = Callable[[str], object]
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
    "Search the text files in the workspace for a regular expression (Python syntax; "
    "patterns with look-around or backreferences are stopped after "
    f"{BACKTRACKING_DEADLINE_S:g} s) or, "
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


def _re2_options(ignore_case: bool) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.case_sensitive = not ignore_case
    options.max_mem = RE2_MAX_MEM
    return options


def _compile(pattern: str, literal: bool, ignore_case: bool) -> Matcher:
    """A matcher whose work is linear in the line's length, whatever the pattern.

    Python's `re` backtracks: `(a+)+$` on 34 a's and a `!` takes longer than the universe,
    in C code no signal or deadline can interrupt, so a model (or a file it was shown) could
    stall the agent for good. Patterns therefore run on RE2, which has no backtracking;
    the few constructs that need backtracking (look-around, backreferences) are run by
    Python's engine in a child process killed at a deadline (`backtracking.py`)."""
    if not pattern:
        raise ToolArgumentError("pattern must not be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolArgumentError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    if literal:
        return _literal(pattern, ignore_case)
    try:
        return re2.compile(pattern, _re2_options(ignore_case)).search
    except re2.error:
        pass
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolArgumentError(
            f"pattern is not a valid regular expression ({exc}); pass literal=true to search "
            "for it as plain text"
        ) from None
    raise NeedsBacktracking(pattern)


class NeedsBacktracking(Exception):
    """A valid pattern RE2 cannot run: look-around or a backreference (search_files runs
    it in the killable child, backtracking.py)."""


def _literal(pattern: str, ignore_case: bool) -> Matcher:
    if not ignore_case:
        return lambda line: pattern in line
    folded = pattern.casefold()
    return lambda line: folded in line.casefold()


def _wanted(rel: str, name: str, glob: str | None) -> bool:
    if not glob:
        return True
    return fnmatch.fnmatchcase(rel if "/" in glob else name, glob)


@dataclass(frozen=True)
class _Entry:
    """A file found by the walk: its path by name (for display and globs) and, where the
    platform allows, the descriptor of the folder it was found in and its name there."""

    path: Path
    folder: int | None = None


def _entries(workspace: Path, start: Path, shown: str) -> Iterator[_Entry]:
    """Every file under `start`, in a stable order, without walking into skipped folders or
    following folder symlinks. Folders are walked by descriptor (`os.fwalk` checks each
    one it enters is the folder it listed), so a folder swapped for a link mid-walk is not
    entered."""
    if not start.is_dir():
        yield _Entry(start)
        return
    if not ANCHORED:
        for folder, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(files):
                yield _Entry(Path(folder) / name)
        return
    top = anchored.open_folder(workspace, start, shown)
    try:
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(files):
                yield _Entry(start / folder / name, fd)
    finally:
        os.close(top)


def _is_link(entry: _Entry) -> bool:
    try:
        if entry.folder is None:
            return entry.path.is_symlink()
        st = os.stat(entry.path.name, dir_fd=entry.folder, follow_symlinks=False)
        return stat.S_ISLNK(st.st_mode)
    except OSError:
        return False


def _open_entry(workspace: Path, entry: _Entry, rel: str) -> int | None:
    """A read descriptor of a regular file found by the walk (None: not one, or gone).

    A plain file is opened by name in its folder's descriptor without following links; a
    link (already judged to stay inside) is opened by its resolved path from the workspace
    root, component by component, the way read_file opens."""
    if entry.folder is not None and not _is_link(entry):
        try:
            fd = os.open(
                entry.path.name,
                os.O_RDONLY | anchored.NOFOLLOW | anchored.NONBLOCK | anchored.CLOEXEC,
                dir_fd=entry.folder,
            )
        except OSError:
            return None  # vanished, or became a link since it was looked at
        try:
            anchored.check_regular(os.fstat(fd), rel)
            os.set_blocking(fd, True)
        except (ToolError, OSError):
            os.close(fd)
            return None
        return fd
    try:
        return anchored.open_file(workspace, Path(os.path.realpath(entry.path)), rel)
    except (ToolError, OSError):  # a link on the way changed while it was followed
        return None


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
    *,
    backtracking: bool = False,
) -> str:
    """The text search_files returns (blocking; the tool runs it in a thread). A pattern
    only a backtracking engine runs raises NeedsBacktracking; `backtracking`: match it
    with Python's `re` (only ever inside the killable child)."""
    if backtracking:
        flags = re.IGNORECASE if ignore_case else 0
        matches: Matcher = re.compile(pattern, flags).search
    else:
        matches = _compile(pattern, literal, ignore_case)  # NeedsBacktracking: the caller's
    start = resolve_inside(workspace, path)
    shown_start = display_path(workspace, start)
    if not start.exists():
        raise ToolError(f"{shown_start}: no such file or folder")
    root = workspace_root(workspace)
    deadline = time.monotonic() + DEADLINE_S
    tally = _Tally()
    hits: list[str] = []
    for entry in _entries(workspace, start, shown_start):
        if tally.files >= MAX_FILES:
            tally.stopped = f"stopped after {MAX_FILES:,} files"
            break
        if time.monotonic() > deadline:
            tally.stopped = f"stopped after {DEADLINE_S:g} seconds"
            break
        if _is_link(entry):
            try:
                real = Path(os.path.realpath(entry.path))
            except OSError:  # the link or a folder on its way changed mid-search
                tally.outside += 1
                continue
            if real != root and not real.is_relative_to(root):
                tally.outside += 1
                continue
        rel = display_path(workspace, entry.path)
        if not _wanted(rel, entry.path.name, glob):
            continue
        fd = _open_entry(workspace, entry, rel)
        if fd is None:
            continue
        tally.files += 1
        with os.fdopen(fd, "rb") as handle:
            try:
                if os.fstat(handle.fileno()).st_size > MAX_FILE_BYTES:
                    tally.large += 1
                    continue
                data = handle.read(MAX_FILE_BYTES + 1)
            except OSError:
                continue
        if looks_binary(data[:SNIFF_BYTES]):
            tally.binary += 1
            continue
        found = False
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
            if number % DEADLINE_EVERY_LINES == 0 and time.monotonic() > deadline:
                tally.stopped = f"stopped after {DEADLINE_S:g} seconds"
                break
            if matches(line):
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
    pattern = args["pattern"]
    path = args.get("path") or "."
    glob = args.get("glob") or None
    ignore_case = bool(args.get("ignore_case", False))
    try:
        return await asyncio.to_thread(
            search,
            ctx.workspace,
            pattern,
            path,
            glob,
            bool(args.get("literal", False)),
            ignore_case,
        )
    except NeedsBacktracking:
        pass
    text = await search_in_child(
        ctx.workspace, pattern, path, glob, ignore_case, BACKTRACKING_DEADLINE_S
    )
    return (
        f"{text}\n[The pattern uses look-around or a backreference, so it ran on "
        f"Python's backtracking engine, stopped after {BACKTRACKING_DEADLINE_S:g} s.]"
    )


TOOL = Tool(
    name=NAME,
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=search_files,
    aliases={"regex": "pattern", "query": "pattern", "directory": "path"},
)
