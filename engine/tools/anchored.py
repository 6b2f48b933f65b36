"""Opening workspace files from the workspace's own folder descriptor, never by name.

`resolve_inside` judges a path, but a check by name followed by an open by name leaves a
window: a concurrent process (a build, a sync client, or a hostile script the model ran)
can swap a checked file or folder for a symlink to `~/.ssh` between the two. So every file
tool opens what it uses here, one component at a time from a descriptor of the workspace
root, with `ONOFOLLOW` on each component (`O_DIRECTORY` on the folders): the resolved path
has no links left in it, so a link found on the way can only be one that appeared after the
check, and the open fails instead of following it. Writes go through the parent folder's
descriptor the same way.

Where the platform has no `dir_fd` (Windows), the opens fall back to the checked name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from engine.tools.errors import ToolError
from engine.tools.workspace import workspace_root

ANCHORED = (
    os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace takes the same dir_fd arguments
    and os.scandir in os.supports_fd
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class PathChanged(ToolError):
    """A component of a checked path became a link (or vanished) before it was opened."""


def _parts(workspace: Path, real: Path) -> tuple[Path, tuple[str, ...]]:
    root = workspace_root(workspace)
    try:
        return root, real.relative_to(root).parts
    except ValueError:  # resolve_inside never returns such a path; refuse rather than open
        raise PathChanged(f"{real} is not inside the workspace") from None


def _changed(shown: str, exc: OSError, missing: str = "no such file or folder") -> ToolError:
    if exc.errno == errno.ELOOP:
        return PathChanged(
            f"{shown}: a part of this path became a symbolic link while it was being opened; "
            "nothing was read or written"
        )
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"{shown}: {missing}")
    if isinstance(exc, NotADirectoryError):
        return ToolError(f"{shown}: a parent of this path is a file, not a folder")
    return ToolError(f"{shown}: cannot be opened ({exc.strerror or exc})")


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_dir(name: str, folder: int, shown: str, missing: str = "no such file or folder") -> int:
    """`name` in `folder` opened as a folder, never through a link. Linux answers a link
    met with O_DIRECTORY | O_NOFOLLOW as "not a directory", so a refusal is looked at
    again to tell a link that appeared from a file that was always there."""
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, folder):
            raise _changed(shown, OSError(errno.ELOOP, "link")) from exc
        raise _changed(shown, exc, missing) from exc


def _walk(root: Path, parts: tuple[str, ...], shown: str) -> int:
    """A descriptor of the folder `root/parts...`, every component opened without links."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | CLOEXEC)
    try:
        for part in parts:
            nxt = _open_dir(part, fd, shown)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_folder(workspace: Path, real: Path, shown: str) -> int:
    """A descriptor of the folder `real` (a path `resolve_inside` returned); the caller
    closes it (-1 where the platform cannot open folders: list it by name)."""
    if not ANCHORED:
        if not real.is_dir():
            if real.exists():
                raise ToolError(f"{shown} is a file, not a folder; use read_file for files")
            raise ToolError(f"{shown}: no such folder")
        return -1  # listed by name where folders cannot be opened
    root, parts = _parts(workspace, real)
    if parts:
        parent = _walk(root, parts[:-1], shown)
        try:
            return _open_dir(parts[-1], parent, shown, "no such folder")
        except PathChanged:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, NotADirectoryError):
                raise ToolError(
                    f"{shown} is a file, not a folder; use read_file for files"
                ) from exc
            raise
        finally:
            os.close(parent)
    return _walk(root, (), shown)


def open_file(workspace: Path, real: Path, shown: str) -> int:
    """A blocking read descriptor of the regular file `real`; the caller closes it.

    The open itself does not block (a FIFO put in the file's place answers at once), and
    what was opened is checked by its descriptor: a folder, device or pipe is refused."""
    if ANCHORED:
        root, parts = _parts(workspace, real)
        if not parts:
            raise ToolError(f"{shown} is a folder; use list_directory for folders")
        parent = _walk(root, parts[:-1], shown)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC, dir_fd=parent)
        except OSError as exc:
            raise _changed(shown, exc, "no such file") from exc
        finally:
            os.close(parent)
    else:
        try:
            fd = os.open(real, os.O_RDONLY | NONBLOCK | CLOEXEC | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise _changed(shown, exc, "no such file") from exc
    try:
        check_regular(os.fstat(fd), shown)
        if NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_regular(st: os.stat_result, shown: str) -> int:
    """The size of a regular file, or the ToolError saying what `shown` is instead."""
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a folder; use list_directory for folders")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe)")
    return st.st_size


def read_bytes(workspace: Path, real: Path, shown: str) -> bytes:
    """The whole content of the regular file `real`, read through an anchored descriptor."""
    fd = open_file(workspace, real, shown)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def exists(workspace: Path, real: Path) -> bool:
    """Whether anything (a link included) is at `real`, asked of its parent's descriptor."""
    if not ANCHORED:
        return os.path.lexists(real)
    root, parts = _parts(workspace, real)
    if not parts:
        return True
    try:
        parent = _walk(root, parts[:-1], str(real))
    except ToolError:
        return False
    try:
        os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(parent)


@contextlib.contextmanager
def _parent_for_write(workspace: Path, real: Path, shown: str) -> Iterator[tuple[int, str]]:
    """The parent folder's descriptor (missing folders created on the way, each by the
    descriptor of the one above) and the file's name in it."""
    root, parts = _parts(workspace, real)
    if not parts:
        raise ToolError(f"{shown} is a folder; give a file path")
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | CLOEXEC)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            nxt = _open_dir(part, fd, shown)
            os.close(fd)
            fd = nxt
    except OSError as exc:
        os.close(fd)
        raise _changed(shown, exc) from exc
    except BaseException:
        os.close(fd)
        raise
    try:
        yield fd, parts[-1]
    finally:
        os.close(fd)


def write_bytes(workspace: Path, real: Path, shown: str, data: bytes) -> None:
    """Replace the file `real` with `data` atomically, inside the parent folder reached by
    descriptor: a folder swapped for a link at the last moment fails the write, and a link
    put in the file's own place is replaced, never written through."""
    if not ANCHORED:
        from engine.atomic import atomic_write_bytes

        real.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(real, data)
        return
    with _parent_for_write(workspace, real, shown) as (parent, name):
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            keep_mode = mode & 0o7777 if stat.S_ISREG(mode) else None
        except FileNotFoundError:
            keep_mode = None
        tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o666, dir_fd=parent
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if keep_mode is not None:
                    os.fchmod(handle.fileno(), keep_mode)
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        with contextlib.suppress(OSError):
            os.fsync(parent)
