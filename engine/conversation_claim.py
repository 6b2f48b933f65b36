"""One writer per conversation: while a session has a conversation open, no other Brim
process (a second window, a headless chat resuming it) can open it too.

Two processes appending to one conversation would interleave their turns, each with its own
idea of the history, and both would compact it. So opening a conversation takes an exclusive
advisory lock on `<data>/open/<id>.lock`; a second opener is refused at once with a message
that names the process holding it. The kernel drops the lock when its process exits, killed
or not, so a crash never leaves a conversation locked. The lock files stay (deleting one
while another process opens it would let two holders in); they are a few bytes each.

On a platform without `fcntl`, or a file system without locks (some network mounts), the
claim is not enforced: the conversation opens, and the log says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from engine.paths import safe_component

try:
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms Brim ships for
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)


class ConversationBusy(Exception):
    """The conversation is open in another Brim process."""

    def __init__(self, conversation_id: str, holder: int | None) -> None:
        who = f"another Brim (process {holder})" if holder else "another Brim"
        super().__init__(
            f"conversation {conversation_id!r} is open in {who}; close it there first, or "
            "start a new conversation"
        )
        self.conversation_id = conversation_id
        self.holder = holder


class ConversationClaim:
    """Held while a session has `conversation_id` open; `release()` (or exit) lets it go."""

    def __init__(self, conversation_id: str, fd: int | None) -> None:
        self.conversation_id = conversation_id
        self._fd = fd

    @classmethod
    def take(cls, folder: Path, conversation_id: str) -> ConversationClaim:
        """Claim the conversation, or raise ConversationBusy naming who holds it."""
        if fcntl is None:
            return cls(conversation_id, None)
        path = folder / f"{safe_component(conversation_id)}.lock"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("conversation %s opened without a lock (%s)", conversation_id, exc)
            return cls(conversation_id, None)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise ConversationBusy(conversation_id, holder) from None
        except OSError as exc:  # a file system without locks (some network mounts)
            os.close(fd)
            log.warning("conversation %s opened without a lock (%s)", conversation_id, exc)
            return cls(conversation_id, None)
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):  # the pid is only for the message
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        return cls(conversation_id, fd)

    def __del__(self) -> None:  # a session dropped without close() must not keep it locked
        self.release()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None or fcntl is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def open_elsewhere(folder: Path, conversation_id: str) -> bool:
    """Whether another Brim process has the conversation open now (a claim, tried and let go).

    For choosing what to open: the answer can change a moment later, so opening still takes
    its own claim and may still be refused."""
    try:
        ConversationClaim.take(folder, conversation_id).release()
    except ConversationBusy:
        return True
    return False  # free, or a folder that cannot hold locks (take() logs that and goes on)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
