"""What can go wrong with Brim's database.

StoreError
 ├── StoreCorrupt          not a SQLite file, or damaged; the original is moved aside
 ├── StoreLocked           another process holds the database past the busy timeout
 ├── StoreFull             the disk (or the file system holding the database) is full
 ├── StoreTooNew           written by a newer Brim (a schema version this one lacks)
 ├── UnknownConversation   no such conversation (or it is deleted)
 ├── UnknownCompaction     no such compaction in the conversation
 └── DuplicateMessage      a message id already in the conversation's history
"""

from __future__ import annotations

from pathlib import Path


class StoreError(Exception):
    """Base of every database error."""


class StoreCorrupt(StoreError):
    def __init__(self, path: Path, detail: str, moved_to: Path | None) -> None:
        if moved_to is not None:
            where = f"the original was moved aside to {moved_to}; opening again starts a new one"
        else:
            where = "the file was left in place"
        super().__init__(f"{path} is not a readable Brim database ({detail}); {where}")
        self.path = path
        self.detail = detail
        self.moved_to = moved_to


class StoreLocked(StoreError):
    def __init__(self, path: Path, waited_s: float) -> None:
        super().__init__(
            f"{path} is locked by another process (waited {waited_s:g} s); "
            "close the other Brim or try again"
        )
        self.path = path


class StoreFull(StoreError):
    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"{path}: the disk is full ({detail}); nothing more could be saved, and what was "
            "saved before is intact. Free some space and send again."
        )
        self.path = path


class StoreTooNew(StoreError):
    def __init__(self, path: Path, version: int, supported: int) -> None:
        super().__init__(
            f"{path} has schema version {version}, written by a newer Brim "
            f"(this one knows up to {supported}); it was left untouched"
        )
        self.path = path
        self.version = version
        self.supported = supported


class UnknownConversation(StoreError):
    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation with id {conversation_id!r}")
        self.conversation_id = conversation_id


class UnknownCompaction(StoreError):
    def __init__(self, conversation_id: str, compaction_id: str) -> None:
        super().__init__(f"no compaction {compaction_id!r} in conversation {conversation_id!r}")
        self.conversation_id = conversation_id
        self.compaction_id = compaction_id


class DuplicateMessage(StoreError):
    def __init__(self, conversation_id: str, message_id: str) -> None:
        super().__init__(f"message {message_id!r} is already in conversation {conversation_id!r}")
        self.conversation_id = conversation_id
        self.message_id = message_id
