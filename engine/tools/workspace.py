"""Keeping every path the model names inside the workspace.

The model's path arguments are untrusted: a prompt-injected file can ask for `~/.ssh/id_rsa`
as easily as the user can ask for `src/main.py`. So a path is resolved the way the operating
system will resolve it when the file is opened, following every symlink on the way (the file
itself and any parent folder), and only then compared with the workspace's own resolved
path. A relative path is taken from the workspace; an absolute one is allowed only when it
lands inside. A dangling symlink is followed to where it points, so a write through it
cannot create a file outside either.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.tools.errors import PathOutsideWorkspace, ToolArgumentError, ToolError

MAX_PATH_CHARS = 4_096


def workspace_root(workspace: Path) -> Path:
    """The workspace's own path with its symlinks resolved (what paths are compared with)."""
    return Path(os.path.realpath(workspace))


def resolve_inside(workspace: Path, raw: str) -> Path:
    """The real path `raw` names, or `PathOutsideWorkspace` when it leads outside.

    `..`, absolute paths and symlinks (a linked file, a linked parent folder, a link whose
    target does not exist yet) are all judged by where they finally lead."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolArgumentError("path must be a non-empty string")
    if "\0" in raw or len(raw) > MAX_PATH_CHARS:
        raise ToolArgumentError("path is not a usable file name")
    root = workspace_root(workspace)
    given = Path(raw.strip())
    candidate = given if given.is_absolute() else root / given
    try:
        real = Path(os.path.realpath(candidate))
    except OSError as exc:  # a link on the way vanished while it was being followed
        raise ToolError(f"{raw!r} changed while it was being looked up ({exc.strerror})") from exc
    if real != root and not real.is_relative_to(root):
        raise PathOutsideWorkspace(
            f"{raw!r} is outside the workspace ({root}); only files inside it can be used"
        )
    return real


def display_path(workspace: Path, real: Path) -> str:
    """How a resolved path is shown to the model: relative to the workspace, `.` for itself."""
    root = workspace_root(workspace)
    try:
        rel = real.relative_to(root)
    except ValueError:
        return str(real)
    text = rel.as_posix()
    return text if text else "."
