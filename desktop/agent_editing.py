"""Opening the agent editor from the sidebar or `/agent`, and putting a save into effect.

The editor works on the agent's file as it is on disk now (read on the engine thread when it
opens), so a save never silently undoes an edit made in a text editor since start-up. Once
the current agent is saved, its session is reopened on the same conversation with the new
settings, so the very next request runs with them: a new pin goes out with it, the header
says `pinned`, the rail shows the new window. A turn that is still running finishes first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Slot

from desktop.agent_editor import AgentEditorDialog
from desktop.bridge import EngineBridge, agent_model_label
from desktop.navigator import Navigator
from desktop.ports import AgentEditingWindow
from engine.api import (
    AgentConfig,
    ConfigError,
    WindowResolution,
    load_agent,
)


class AgentEditing(QObject):
    """Wires the window's requests to the editor and a saved agent to its session."""

    def __init__(
        self,
        window: AgentEditingWindow,
        bridge: EngineBridge,
        navigator: Navigator,
    ) -> None:
        """The `window`'s `edit_agent_requested` carries the name of an agent to edit (the
        sidebar's), its `agent_editor_requested` (the engine's answer to `/agent`) edits the
        current one, and it is the editor's parent. The window says why an agent cannot be
        edited, and when a save waits for the turn; it names the saved agent, and gives the
        composer the focus back once the editor closes."""
        super().__init__(window.as_widget())
        self.window = window
        self.bridge = bridge
        self.navigator = navigator
        self.dialog: AgentEditorDialog | None = None
        self._pending: AgentConfig | None = None  # saved while a turn ran: applied after it
        window.edit_agent_requested.connect(self.edit)
        window.agent_editor_requested.connect(self.edit_current)
        bridge.turn_finished.connect(self._apply_pending)

    # -- opening -----------------------------------------------------------------------------

    @Slot()
    def edit_current(self) -> None:
        agent = self.navigator.agent
        if agent is None:
            self.window.show_error("no_agent", "No agent is open to edit.")
            return
        self.edit(agent.name)

    @Slot(str)
    def edit(self, name: str) -> None:
        """Open the editor on agent `name`, freshly read from its file."""
        if self.dialog is not None:
            self.dialog.raise_()
            self.dialog.activateWindow()
            return
        path = self._path_of(name)
        if path is None:
            self.window.show_error(
                "no_agent", f"The agent '{name}' has no file that could be loaded to edit."
            )
            return
        self.edit_file(path)

    def edit_file(self, path: Path) -> None:
        """Open the editor on the agent file at `path` (a new agent's, too)."""
        if self.dialog is not None:
            self.dialog.raise_()
            self.dialog.activateWindow()
            return
        current = self.navigator.agent
        is_current = current is not None and current.source_path == path

        def read() -> AgentConfig | ConfigError:
            try:
                return load_agent(path)
            except ConfigError as exc:
                return exc

        def loaded(config: AgentConfig | ConfigError) -> None:
            if isinstance(config, ConfigError):
                self.window.show_error(
                    "agent_file", f"{config}\nFix the file in a text editor, then try again."
                )
                return
            if is_current:
                self.bridge.session_call(
                    lambda session: session.window,
                    lambda live: self._open(config, live),
                    lambda _message: self._open(config, None),
                )
            else:
                self._open(config, None)

        def failed(message: str) -> None:
            self.window.show_error("agent_file", message)

        self.bridge.call(read, loaded, failed)

    def _path_of(self, name: str) -> Path | None:
        listing = self.navigator.listing
        entry = listing.agent(name) if listing is not None else None
        if entry is not None and entry.path is not None:
            return entry.path
        current = self.navigator.agent
        if current is not None and current.name == name:
            return current.source_path
        return None

    def _open(self, config: AgentConfig, live: Any) -> None:
        live_window = live if isinstance(live, WindowResolution) else None
        listing = self.navigator.listing
        count = len(listing.conversations.get(config.name, ())) if listing is not None else 0
        kept = (
            f"{count} conversation{'s are' if count != 1 else ' is'} filed under this name "
            "(with its work folders and memory), so it stays; Duplicate makes a copy to name "
            "anew."
            if count
            else ""
        )
        dialog = AgentEditorDialog(
            config,
            self.bridge,
            live=live_window,
            name_kept=kept,
            listings_dir=self.navigator.library.paths.mcp_listings_dir,
            parent=self.window.as_widget(),
        )
        self.dialog = dialog
        dialog.saved.connect(self._on_saved)
        dialog.finished.connect(self._on_finished)
        dialog.open()

    @Slot(int)
    def _on_finished(self, _code: int) -> None:
        dialog, self.dialog = self.dialog, None
        if dialog is not None:
            dialog.deleteLater()
        self.window.focus_composer()

    # -- a save into effect ------------------------------------------------------------------

    def apply(self, config: AgentConfig) -> None:
        """Put an agent's new settings into effect (a save, or a hand edit of its file)."""
        self._on_saved(config)

    @Slot(object)
    def _on_saved(self, config: AgentConfig) -> None:
        current = self.navigator.agent
        if current is None or current.name != config.name:
            self.navigator.refresh()
            return
        self.navigator.agent = config
        self._pending = config
        self._apply_pending()

    @Slot()
    def _apply_pending(self) -> None:
        """Reopen the current conversation with the saved agent, once no turn runs."""
        config = self._pending
        if config is None or self.bridge.busy:
            if config is not None:
                self.window.show_notice(
                    f"Agent '{config.name}' saved; the conversation uses it once this turn ends."
                )
            return
        self._pending = None
        navigator = self.navigator
        conversation = navigator.conversation_id

        def reopen(workspace: Any) -> None:
            folder = workspace if isinstance(workspace, Path) else None
            factory = navigator.make_session(config, conversation, folder, navigator.approver)
            if not self.bridge.reopen(factory):
                self._pending = config  # a turn started meanwhile: try again after it
                return
            self.window.name_agent(config.name, agent_model_label(config))
            navigator.refresh()

        self.bridge.session_call(
            lambda session: session.workspace,
            reopen,
            lambda _message: reopen(navigator.workspace_override),
        )
