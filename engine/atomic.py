"""Durable file writes and locks for the files Brim shares with the user and other processes.

A crash or power cut in the middle of a save must leave either the old file or the new one,
never half of each: agent files are hand-edited, settings and work state are read back on the
next start. So every write goes to a temporary file in the same folder (same file system, so
the rename is atomic), is flushed to the disk, and replaces the target with `os.replace`; the
folder is then synced so the rename itself survives a power cut.

Files that two Brim processes may rewrite (agent files, settings) are also written under a
lock: `file_lock(path)` takes an advisory lock on a hidden sibling `.NAME.lock`, so a
read-modify-write cycle in one process cannot interleave with another's.

    AtomicIOError
     └── FileBusy        the lock was not released within the timeout
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import filelock

DEFAULT_LOCK_TIMEOUT_S = 10.0


class AtomicIOError(OSError):
    """A durable write or a lock failed."""


class FileBusy(AtomicIOError):
    """Another process held the file's lock for longer than the caller would wait."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        super().__init__(
            f"{path}: another Brim process is writing this file (waited {timeout_s:g} s)"
        )
        self.path = path
        self.timeout_s = timeout_s


def _fsync_dir(folder: Path) -> None:
    """Make a rename inside `folder` durable; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # e.g. Windows, where directories cannot be opened and renames are durable
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old or the new file, never a mix.

    An existing file keeps its permission bits; a new one gets the mode a plain `open()`
    would give it (0o666 minus the umask). The parent folder must exist.
    """
    path = Path(path)
    folder = path.parent
    try:
        keep_mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        keep_mode = None
    tmp = folder / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_mode is not None:
            os.chmod(tmp, keep_mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(folder)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """`atomic_write_bytes` for text, written exactly as given (no newline translation)."""
    atomic_write_bytes(path, text.encode(encoding))


def lock_path_for(path: Path) -> Path:
    """The hidden sibling that `file_lock` locks: `.NAME.lock` next to `NAME`."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def file_lock(path: Path, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the advisory lock for `path` (not the file itself) for the duration of the block.

    The lock is re-entrant within one thread, so a helper that locks may call another that
    locks the same file. Raises `FileBusy` when another holder keeps it past `timeout_s`.
    """
    path = Path(path)
    # One instance per lock file in this process, so nested blocks re-enter it.
    lock = filelock.FileLock(str(lock_path_for(path)), is_singleton=True)
    try:
        lock.acquire(timeout=timeout_s)
    except filelock.Timeout as exc:
        raise FileBusy(path, timeout_s) from exc
    try:
        yield
    finally:
        lock.release()
