"""Whole tool results kept on disk so a cut or cleared one can be read again.

A result too long for its budget is cut when it enters the conversation, and the clear rung
later stubs old large ones; in both cases the whole text is written first to
`<tool-results>/<tool_call_id>.txt`, and `retrieve_tool_result` pages through it by offset.

The store is a convenience, never a dependency: on a read-only or full disk `store` returns
False and the caller tells the model to re-run the tool instead. The id comes from the
engine and, for reads, from the model, so it is never used as a path as-is: a name that is
not already a plain, safe file name is mapped to one (with a hash, so distinct ids stay
distinct), and `../../etc/passwd` can only ever name a file inside the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from engine.atomic import atomic_write_text
from engine.context.cut_marks import names_stored_whole
from engine.paths import safe_component
from engine.tools.errors import ResultNotStored, ToolArgumentError

log = logging.getLogger(__name__)

MAX_ID_CHARS = 256
SUFFIX = ".txt"


def result_file_name(tool_call_id: str) -> str:
    """The file a result is stored in; `ToolArgumentError` for an id no engine would send."""
    if not isinstance(tool_call_id, str) or not tool_call_id.strip():
        raise ToolArgumentError("tool_call_id must be a non-empty string")
    if len(tool_call_id) > MAX_ID_CHARS or any(ord(ch) < 32 for ch in tool_call_id):
        raise ToolArgumentError("tool_call_id is not a valid call id")
    return safe_component(tool_call_id) + SUFFIX


@dataclass(frozen=True)
class StoredPage:
    text: str
    offset: int  # where this page starts in the whole result (characters)
    total: int  # the whole result's length (characters)

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts; None when this page reaches the end."""
        end = self.offset + len(self.text)
        return end if end < self.total else None


class ToolResultStore:
    """The `tool-results/` folder of one conversation."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path_for(self, tool_call_id: str) -> Path:
        return self.folder / result_file_name(tool_call_id)

    def store(self, tool_call_id: str, text: str) -> bool:
        """Write the whole result atomically; False (logged) when it cannot be written.

        A result that was cut at insertion is already stored whole; when the clear rung
        later stores the cut text under the same id, the whole one is kept."""
        try:
            path = self.path_for(tool_call_id)
            if names_stored_whole(text, tool_call_id) and path.is_file():
                return True
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
        except (OSError, ToolArgumentError, UnicodeEncodeError) as exc:
            log.warning("could not store tool result %r: %s", tool_call_id, exc)
            return False
        return True

    def has(self, tool_call_id: str) -> bool:
        try:
            return self.path_for(tool_call_id).is_file()
        except (OSError, ToolArgumentError):
            return False

    def read(self, tool_call_id: str, offset: int = 0, limit: int | None = None) -> StoredPage:
        """Characters `offset` to `offset + limit` of a stored result.

        `ResultNotStored` when there is none (never written, or the disk refused it)."""
        if offset < 0:
            raise ToolArgumentError("offset must be 0 or more")
        path = self.path_for(tool_call_id)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise ResultNotStored(f"no stored result for tool_call_id {tool_call_id!r}") from exc
        except OSError as exc:
            raise ResultNotStored(
                f"the stored result for tool_call_id {tool_call_id!r} cannot be read ({exc})"
            ) from exc
        end = len(text) if limit is None else offset + max(limit, 0)
        return StoredPage(text=text[offset:end], offset=min(offset, len(text)), total=len(text))
