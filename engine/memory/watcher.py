"""Tell the desktop when memory changes on disk (another process, a hand edit).

The whole memory root is followed (engine/folder_watcher.py); its notes and queue files
count, lock files and temporary files do not.
"""

from __future__ import annotations

from pathlib import Path

from engine.folder_watcher import DEFAULT_DEBOUNCE_S, FolderWatcher, OnChange

__all__ = ["DEFAULT_DEBOUNCE_S", "MemoryWatcher", "OnChange"]


def _interesting(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if name.endswith((".lock", ".tmp")):
        return False
    return name.endswith((".md", ".json")) or "." not in name


class MemoryWatcher(FolderWatcher):
    """Watches a memory root; `on_change` gets the changed paths after each quiet period."""

    def __init__(
        self, root: Path, on_change: OnChange, *, debounce_s: float = DEFAULT_DEBOUNCE_S
    ) -> None:
        super().__init__(root, on_change, _interesting, debounce_s=debounce_s)
