"""Agents made, copied and removed in the window, and the agents folder followed on disk.

New agent (the sidebar's button, its menu, `/agent new`) writes a commented file beside the
others, with the open agent's engine and model, and opens it in the editor. Duplicate copies a
file under a new name, its comments kept. Delete moves the file to the agents' trash folder
and offers Undo, which puts the same file back. The folder is watched (watchdog, as memory
is): a file added, edited or removed by hand, or one that stops loading, shows in the sidebar
within a second, with its error in place; a hand edit of the open agent's file reaches its
conversation from the next request, as a save in the editor does. The file work runs on the
engine thread.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from desktop.agent_editing import AgentEditing
from desktop.bridge import EngineBridge
from desktop.navigator import Navigator
from desktop.ports import AgentDeskWindow
from engine.api import (
    AgentConfig,
    BrimPaths,
    ConfigError,
    FolderWatcher,
    Listing,
    TrashedAgent,
    create_agent,
    duplicate_agent,
    is_agent_file_change,
    load_agent,
    restore_agent,
    trash_agent,
)

log = logging.getLogger(__name__)

WATCH_DEBOUNCE_S = 0.3
BROKEN_TITLE = "could not be loaded"  # in the setup banner's title about broken agent files


class AgentDesk(QObject):
    """The sidebar's agent actions and the agents folder's watcher."""

    _changes_incoming = Signal(object)  # from the watcher's thread: the changed file names

    def __init__(
        self,
        window: AgentDeskWindow,
        bridge: EngineBridge,
        navigator: Navigator,
        editing: AgentEditing,
        paths: BrimPaths,
        *,
        debounce_s: float = WATCH_DEBOUNCE_S,
    ) -> None:
        """The `window`'s sidebar asks for the actions (`new_agent_requested` is also
        `/agent new`) and offers a delete's undo; the window says why one failed, and its
        setup banner's warning about broken files goes once none is left; `editing` opens a
        new agent in the editor."""
        super().__init__(window.as_widget())
        self.window = window
        self.bridge = bridge
        self.navigator = navigator
        self.editing = editing
        self.paths = paths
        navigator.listing_changed.connect(self._on_listing)
        self.trashed: dict[str, TrashedAgent] = {}  # by agent name, until Undo or restart
        window.new_agent_requested.connect(self.new_agent)
        window.duplicate_agent_requested.connect(self.duplicate)
        window.delete_agent_requested.connect(self.delete)
        window.restore_agent_requested.connect(self.restore)
        self._changes_incoming.connect(self._on_changes, Qt.ConnectionType.QueuedConnection)
        self.watcher = FolderWatcher(
            paths.agents_dir,
            self._changes_incoming.emit,
            is_agent_file_change,
            debounce_s=debounce_s,
            recursive=False,
        )
        try:
            self.watcher.start()
        except OSError:  # no inotify watch left: the list refreshes on the window's own moves
            log.warning("cannot watch %s for changes", paths.agents_dir, exc_info=True)

    def close(self) -> None:
        """Stop watching (the app is shutting down). Safe to call twice."""
        self.watcher.stop()

    # -- the actions -------------------------------------------------------------------------

    @Slot()
    def new_agent(self) -> None:
        """A new agent file (the open agent's engine and model), opened in the editor."""
        like = self.navigator.agent
        paths = self.paths
        self._run(lambda: create_agent(paths, like), self._made, "The new agent was not made")

    @Slot(str)
    def duplicate(self, name: str) -> None:
        entry = self.navigator.listing.agent(name) if self.navigator.listing else None
        if entry is None or entry.config is None:
            return
        config, paths = entry.config, self.paths
        self._run(lambda: duplicate_agent(paths, config), self._copied, f"'{name}' was not copied")

    @Slot(str)
    def delete(self, name: str) -> None:
        """Move the agent's file to the trash; the undo bar offers it back."""
        entry = self.navigator.listing.agent(name) if self.navigator.listing else None
        if entry is None or entry.path is None:
            return
        path, paths = entry.path, self.paths

        def deleted(trashed: TrashedAgent) -> None:
            self.trashed[name] = trashed
            self.window.offer_agent_undo(name)
            self.navigator.refresh()

        self._run(lambda: trash_agent(paths, path, name), deleted, f"'{name}' was not deleted")

    @Slot(str)
    def restore(self, name: str) -> None:
        trashed = self.trashed.pop(name, None)
        if trashed is None:
            return
        paths = self.paths
        self._run(
            lambda: restore_agent(paths, trashed),
            lambda _path: self.navigator.refresh(),
            f"'{name}' was not restored",
        )

    def _made(self, config: AgentConfig) -> None:
        self.navigator.refresh()
        if config.source_path is not None:
            self.editing.edit_file(config.source_path)

    def _copied(self, _config: AgentConfig) -> None:
        self.navigator.refresh()

    def _run(self, work: Any, done: Any, failure: str) -> None:
        """`work` on the engine thread; a refusal (a file that cannot be written) is said in
        the banner, never as a traceback."""

        def attempt() -> Any:
            try:
                return work()
            except (ConfigError, OSError, ValueError) as exc:
                return exc

        def answered(result: Any) -> None:
            if isinstance(result, Exception):
                self.window.show_error("agent_file", f"{failure}: {result}")
            else:
                done(result)

        self.bridge.call(attempt, answered, lambda message: answered(RuntimeError(message)))

    # -- the folder --------------------------------------------------------------------------

    @Slot(object)
    def _on_listing(self, listing: Listing) -> None:
        """Start-up's list of broken agent files follows the folder: fixed, it goes."""
        if not listing.problems:
            self.window.clear_setup_notice(BROKEN_TITLE)

    @Slot(object)
    def _on_changes(self, changed: list[str]) -> None:
        self.navigator.refresh()
        current = self.navigator.agent
        path = current.source_path if current is not None else None
        if current is None or path is None or path.name not in changed:
            return

        def read() -> AgentConfig | None:
            try:
                return load_agent(path)
            except ConfigError:
                return None  # a broken or removed file: the sidebar says so; the chat goes on

        def loaded(config: AgentConfig | None) -> None:
            now = self.navigator.agent
            if config is None or now is None or now.source_path != path:
                return
            if config.name == now.name and config.values() != now.values():
                self.editing.apply(config)  # as a save in the editor: from the next request

        self.bridge.call(read, loaded)
