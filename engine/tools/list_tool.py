"""list_directory: what a folder in the workspace holds, with kinds and sizes.

Folders first, then everything else, each by name, so the same folder lists the same way
every time (a stable result keeps the engine's cache warm too). A symlink is shown with its
target and marked when it leads outside the workspace, where the file tools will not follow
it. Huge folders are cut to a bounded number of entries with a count of the rest.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

from engine.tools.anchored import ANCHORED, open_folder
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError
from engine.tools.registry import Tool
from engine.tools.textfiles import human_size
from engine.tools.workspace import display_path, resolve_inside, workspace_root

NAME = "list_directory"
MAX_ENTRIES = 500

DESCRIPTION = (
    "List a folder in the workspace: one entry per line with its kind (dir, file, link, "
    "other), its size for files, and its name; folders first, then files, by name. "
    f"At most {MAX_ENTRIES} entries; the result says how many more there are."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Folder path, relative to the workspace. Default: the workspace.",
        },
    },
    "required": [],
}


def _line(folder: int, real: Path, name: str, root: Path) -> str:
    """One entry, looked at through the folder's descriptor `folder` (never by a path that
    a swapped-in link could redirect); `real` is only used to tell where a link leads."""
    try:
        st = os.lstat(name, dir_fd=folder) if ANCHORED else os.lstat(real / name)
    except OSError:
        return f"{'?':<5} {'':>10}  {name}"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=folder) if ANCHORED else os.readlink(real / name)
        except OSError:
            target = "?"
        try:
            leads = Path(os.path.realpath(real / name))
            inside = leads == root or leads.is_relative_to(root)
        except OSError:  # the link changed while it was followed: say nothing of inside
            inside = False
        note = "" if inside else " (outside the workspace)"
        return f"{'link':<5} {'':>10}  {name} -> {target}{note}"
    if stat.S_ISDIR(st.st_mode):
        return f"{'dir':<5} {'':>10}  {name}/"
    if stat.S_ISREG(st.st_mode):
        return f"{'file':<5} {human_size(st.st_size):>10}  {name}"
    return f"{'other':<5} {'':>10}  {name}"


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def list_folder(workspace: Path, path: str = ".") -> str:
    """The text list_directory returns (blocking; the tool runs it in a thread).

    Only the entries shown are stat'ed, so a folder of a million files costs a sort of
    names, not a million system calls."""
    real = resolve_inside(workspace, path)
    shown = display_path(workspace, real)
    root = workspace_root(workspace)
    # The folder is opened from the workspace's descriptor without following links, and
    # listed through that descriptor: a folder swapped for a link after the check above
    # fails the open instead of listing what the link points at.
    folder = open_folder(workspace, real, shown)
    try:
        try:
            with os.scandir(folder if ANCHORED else real) as entries:
                keys = [(0 if _is_dir(e) else 1, e.name.casefold(), e.name) for e in entries]
        except OSError as exc:
            raise ToolError(f"{shown}: cannot be listed ({exc.strerror or exc})") from exc
        if not keys:
            return f"Folder: {shown} (empty)"
        keys.sort()
        count = len(keys)
        head = f"Folder: {shown} ({count:,} {'entry' if count == 1 else 'entries'})"
        lines = [head, *(_line(folder, real, name, root) for _, _, name in keys[:MAX_ENTRIES])]
    finally:
        if folder >= 0:
            os.close(folder)
    if count > MAX_ENTRIES:
        lines.append(
            f"[… and {count - MAX_ENTRIES:,} more entries not shown; list a subfolder or use "
            "search_files with a glob.]"
        )
    return "\n".join(lines)


async def list_directory(args: dict[str, Any], ctx: ToolContext) -> str:
    return await asyncio.to_thread(list_folder, ctx.workspace, args.get("path") or ".")


TOOL = Tool(
    name=NAME,
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=list_directory,
    aliases={"dir": "path", "directory": "path", "folder": "path"},
)
