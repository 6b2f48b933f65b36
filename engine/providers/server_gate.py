"""One chat request at a time from Brim to one llama-server, whoever in Brim sends it.

llama-server's default slots share one KV pool, so two requests in flight together can make
both fail though each alone fits (engine/agent/shared_pool.py). Brim's own requests must never be
the two: the agent's turn, the summarizer, memory's extraction and reflection (a separate
process), and every open conversation of the desktop on the same server, each with its own
provider. So a request holds an exclusive lock on a file named after the server for as long
as its answer streams. The file is in this user's temporary folder, not in Brim's data
folder: the server is one for every Brim this user runs, whatever `--data-dir` each uses.

The lock is `flock` on a descriptor opened for this request alone, so it excludes other
requests of the same process as well as other processes, and the kernel drops it when a
process dies. Without `fcntl` (or on a file system without locks) the gate still serialises
the requests of one provider, and the log says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms Brim ships for
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# How often a waiting request looks again (seconds), from the first value up to the last.
POLL_FIRST_S = 0.02
POLL_MAX_S = 0.25


def gate_folder() -> Path:
    """Where the lock files live: per user, outside any Brim data folder."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"brim-{uid}-engines"


class ServerGate:
    """Held while one chat request to `key` (the server's URL) is in flight."""

    def __init__(self, key: str, folder: Path | None = None) -> None:
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        self.path = (folder or gate_folder()) / f"{digest}.lock"
        self._local = asyncio.Lock()  # the fallback, and fairness within one provider

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        async with self._local:
            fd = self._open()
            try:
                if fd is not None:
                    await self._lock(fd)
                yield
            finally:
                if fd is not None:
                    with contextlib.suppress(OSError):
                        fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("requests to one server are not serialised across processes (%s)", exc)
            return None

    async def _lock(self, fd: int) -> None:
        poll = POLL_FIRST_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                await asyncio.sleep(poll)
                poll = min(POLL_MAX_S, poll * 1.5)
            except OSError as exc:  # a file system without locks (some network mounts)
                log.warning("requests to one server are not serialised (%s)", exc)
                return
