"""Tell the desktop when files in a folder change on disk (another process, a hand edit).

A watchdog observer follows the folder; changes are collected and reported together after a
short quiet period, from the observer's thread, so a burst of writes (an atomic save is a
temporary file, then a rename) is one refresh. Which paths count is the watcher's
`interesting` test (memory: its notes; agents: their TOML files). No Qt here: the desktop
turns the callback into a queued signal.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)

# When a folder is made with its parents in one go (a new agent's memory), watchdog adds
# watches for the new tree and then again for each inner folder inotify reports, and warns
# that it is re-using its own callback. The warning is harmless and says nothing to a user.
SELF_OVERWRITE_WARNING = r"Callback with id .* already exists for watch"
warnings.filterwarnings("ignore", message=SELF_OVERWRITE_WARNING, category=RuntimeWarning)

DEFAULT_DEBOUNCE_S = 0.25

OnChange = Callable[[list[str]], None]  # the changed paths, relative to the watched root
Interesting = Callable[[str], bool]  # a path relative to the root: does its change count


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: FolderWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                self.watcher._note(Path(str(raw)))


class FolderWatcher:
    """Watches a folder; `on_change` gets the changed paths after each quiet period."""

    def __init__(
        self,
        root: Path,
        on_change: OnChange,
        interesting: Interesting,
        *,
        debounce_s: float = DEFAULT_DEBOUNCE_S,
        recursive: bool = True,
    ) -> None:
        self.root = Path(root)
        self.interesting = interesting
        self.recursive = recursive
        self.on_change = on_change
        self.debounce_s = debounce_s
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._pending: set[str] = set()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._observer is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        observer = Observer()
        observer.schedule(_Handler(self), str(self.root), recursive=self.recursive)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._pending.clear()
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)

    def __enter__(self) -> FolderWatcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _note(self, path: Path) -> None:
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return
        if not self.interesting(rel):
            return
        with self._lock:
            if self._observer is None:
                return
            self._pending.add(rel)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            changed = sorted(self._pending)
            self._pending.clear()
            self._timer = None
        if not changed:
            return
        try:
            self.on_change(changed)
        except Exception:
            log.exception("%s: the change listener failed", self.root)
