"""Agents and conversations: the sidebar's requests turned into engine intents.

The library (engine/library.py) is opened and read on the engine thread; results come back
through the bridge. Switching within one agent keeps its engine (and loaded model) when no
turn runs; another agent, or a conversation left while its answer streams, gets a session of
its own, and the one left goes on. Start-up problems — a broken agent file, no usable agent,
a first start — are said in the window, never as a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QPoint, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog

from desktop.bridge import EngineBridge, SessionFactory, SessionInfo, agent_model_label
from desktop.drafts import Drafts
from desktop.ports import NavigatorWindow
from engine.api import (
    LAST_AGENT,
    LAST_CONVERSATION,
    WORKSPACE,
    AgentConfig,
    Approver,
    BrimPaths,
    ChatSession,
    Choice,
    EventSink,
    Library,
    Listing,
    open_elsewhere,
)

# Builds the factory for one agent's session: (agent, conversation id or None, workspace,
# approver) -> factory(sink).
MakeSession = Callable[[AgentConfig, str | None, Path | None, Approver], SessionFactory]

GEOMETRY = "window_geometry"
SPLITTER = "splitter_sizes"


def chat_session_maker(paths: BrimPaths, *, reflect_on_close: bool = True) -> MakeSession:
    """Real sessions: the engine's `ChatSession`. Leaving a
    conversation starts a detached reflection on it unless `reflect_on_close` is False (a
    one-shot `--screenshot` run, tests)."""

    def make(
        agent: AgentConfig,
        conversation_id: str | None,
        workspace: Path | None,
        approver: Approver,
    ) -> SessionFactory:
        def factory(sink: EventSink):  # type: ignore[no-untyped-def]

            return ChatSession(
                agent,
                paths,
                sink,
                conversation_id=conversation_id,
                workspace=workspace,
                approver=approver,
                # The desktop is where memory is reviewed: it reads memory, queues
                # suggestions, and reflects on a conversation when the user leaves it.
                memory=True,
                reflect_on_close=reflect_on_close,
                # Compaction while the user reads, so the next Enter does not wait for it.
                compact_ahead=True,
            )

        return factory

    return make


class Navigator(QObject):
    startup_failed = Signal(str)  # the library could not open: the banner says why
    # Another conversation is about to be shown: what belongs to this one is cleared (the
    # window's rows, rail and warnings; desktop/app.py connects it).
    conversation_changing = Signal()
    listing_changed = Signal(object)  # a fresh Listing is shown in the sidebar

    def __init__(
        self,
        window: NavigatorWindow,
        bridge: EngineBridge,
        library: Library,
        approver: Approver,
        make_session: MakeSession,
        *,
        workspace: Path | None = None,
    ) -> None:
        """The `window`'s sidebar asks for conversations (its `conversation_*_requested`),
        which this opens, renames, deletes and restores, and lists in it; the window says
        what went wrong and what start-up found, names the agent, holds each conversation's
        draft, and is the parent of the folder dialog, its place and split saved and
        restored; its `closing` saves them, and its `new_conversation_requested` (a typed
        `/new`) leaves the conversation as a switch from the sidebar does."""
        super().__init__(window.as_widget())
        self.window = window
        self.bridge = bridge
        self.library = library
        self.approver = approver
        self.make_session = make_session
        self.workspace_override = workspace
        self.listing: Listing | None = None
        self.agent: AgentConfig | None = None
        self.conversation_id: str | None = None
        self._session_open = False
        self._deleting: set[str] = set()  # conversations whose delete has not landed yet
        self.drafts = Drafts(
            window,
            library.settings,
            library.save_settings,
            lambda: self.conversation_id,
        )
        window.conversation_open_requested.connect(self.open)
        window.conversation_rename_requested.connect(self.rename)
        window.conversation_delete_requested.connect(self.delete)
        window.conversation_restore_requested.connect(self.restore)
        window.folder_requested.connect(self.choose_folder)
        bridge.opened.connect(self._on_opened)
        bridge.turn_finished.connect(self.refresh)
        bridge.background_finished.connect(self.refresh)  # its title, its count
        window.closing.connect(self.save_window)
        window.new_conversation_requested.connect(self.leave_for_new)

    # -- start -----------------------------------------------------------------------------

    def start(self) -> None:
        settings = self.library.settings()
        self._restore_window(settings)
        folder = self.workspace_override or settings.get(WORKSPACE)
        self.window.show_folder(str(folder) if folder else None)
        self.bridge.call(self._startup, self._started, self._startup_failed)

    def _startup(self) -> tuple[Listing, Choice | None, Path | None]:  # on the engine thread
        self.library.open()
        listing = self.library.listing()
        choice = self.library.choose()
        workspace = None
        if choice is not None:
            workspace = self.library.workspace_for(choice.conversation_id)
            if choice.conversation_id is None and self.workspace_override is not None:
                workspace = self.workspace_override
        return listing, choice, workspace

    def _started(self, result: tuple[Listing, Choice | None, Path | None]) -> None:
        listing, choice, workspace = result
        self.listing = listing
        current = choice.conversation_id if choice else None
        self.window.show_listing(listing, current)
        paths = self.library.paths
        if listing.problems:
            count = len(listing.problems)
            noun = "agent file" if count == 1 else "agent files"
            self.window.show_setup_notice(
                "warning",
                f"{count} {noun} could not be loaded",
                "\n".join(listing.problems)
                + "\nThe other agents work; the sidebar shows each fix as it is saved.",
            )
        elif self.library.recovered_from is not None:
            self.window.show_setup_notice(
                "warning",
                "The conversation database could not be read",
                f"It was moved aside to {self.library.recovered_from} (nothing was deleted) "
                "and a new one was started. Agents and memory are files of their own and are "
                "untouched.",
            )
        elif choice is not None and choice.skipped_open_elsewhere:
            self.window.show_setup_notice(
                "info",
                "The last conversation is open in another Brim window",
                "This window started a new conversation; close the other window to continue "
                "that one here.",
            )
        elif listing.created_default is not None:
            self.window.show_setup_notice(
                "info",
                "First start",
                f"Brim wrote the default agent to {listing.created_default}. It runs the "
                "bundled model on this machine; edit the file to use Ollama, llama-server, "
                "vLLM or SGLang instead.",
            )
        if choice is None:
            self.window.fail_start(
                "no_agent",
                f"Every agent file in {paths.agents_dir} has a problem; fix one, then pick it "
                "in the sidebar.",
            )
            return
        self._open_session(choice.agent, choice.conversation_id, workspace)

    def _startup_failed(self, message: str) -> None:
        self.window.fail_start("startup", message, retry=True)
        self.startup_failed.emit(message)

    # -- switching -------------------------------------------------------------------------

    @Slot(str, object)
    def open(self, agent_name: str, conversation_id: str | None) -> None:
        """Open a conversation (None: a new one) of an agent from the sidebar. A turn running
        in the one shown goes on in its own session (desktop/bridge.py); a conversation whose
        session went on unseen is shown again from that session."""
        entry = self.listing.agent(agent_name) if self.listing else None
        if self.bridge.opening:
            self.window.show_error("busy", "A conversation is opening; try again once it is open.")
            self._keep_highlight()
            return
        if conversation_id != self.conversation_id and self.bridge.holds(conversation_id):
            if entry is not None and entry.config is not None:
                self.agent = entry.config
            self._leave(lambda: self.bridge.switch_conversation(conversation_id))
            return
        if (
            conversation_id
            and conversation_id != self.conversation_id
            and open_elsewhere(self.library.paths.open_dir, conversation_id)
        ):  # asked before anything closes: the window stays on what it has
            self.window.show_error(
                "conversation_busy",
                "That conversation is open in another Brim window or chat; close it there first.",
            )
            self._keep_highlight()
            return
        same_agent = self.agent is not None and agent_name == self.agent.name
        if same_agent and self._session_open and not self.bridge.busy:
            self._leave(lambda: self.bridge.switch_conversation(conversation_id))
            return
        if entry is None or entry.config is None:
            self._keep_highlight()
            return
        config = entry.config

        def workspace() -> Path | None:
            found = self.library.workspace_for(conversation_id)
            if conversation_id is None and self.workspace_override is not None:
                return self.workspace_override
            return found

        self.bridge.call(workspace, lambda ws: self._open_session(config, conversation_id, ws))

    def _leave(self, switch: Callable[[], bool]) -> None:
        """Put this conversation's draft away and clear what it showed, once `switch` has
        taken the window to another one."""
        self.drafts.save_now()
        if switch():
            self.drafts.leave()
            self.conversation_changing.emit()
        else:
            self._keep_highlight()

    def _keep_highlight(self) -> None:
        """The sidebar's highlight stays on the conversation shown (a click moved it)."""
        if self.agent is not None and self.conversation_id:
            self.window.mark_current(self.agent.name, self.conversation_id)

    @Slot()
    def leave_for_new(self) -> None:
        """A typed `/new`: the session opens a new conversation of this agent (the bridge's
        `opened` follows). As on a switch from the sidebar, this one's draft is put away —
        the `/new` sent from it is none, whether the composer still holds it or not — and
        what it showed is cleared."""
        self.drafts.leave(sent=self.window.last_sent())
        self.conversation_changing.emit()

    def _open_session(
        self, agent: AgentConfig, conversation_id: str | None, workspace: Path | None
    ) -> None:
        self.agent = agent
        factory = self.make_session(agent, conversation_id, workspace, self.approver)
        self.drafts.leave()
        self.conversation_changing.emit()
        self.window.name_agent(agent.name, agent_model_label(agent))
        if self._session_open:
            self.bridge.open_beside(factory)  # a running turn goes on unseen
        else:
            self.bridge.open(factory)
        self._session_open = True

    @Slot(object)
    def _on_opened(self, info: SessionInfo) -> None:
        self.conversation_id = info.conversation_id
        self.drafts.restore(info.conversation_id)
        if self.agent is not None:
            self.window.mark_current(self.agent.name, info.conversation_id)
            self.library.save_settings(
                **{LAST_AGENT: self.agent.name, LAST_CONVERSATION: info.conversation_id}
            )
        self.refresh()

    # -- the list --------------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        keep = self.conversation_id

        def done(listing: Listing) -> None:
            if self._deleting:
                return  # read before a delete landed, it would show the row again; one follows
            self.listing = listing
            self.window.show_listing(listing, keep)
            self.listing_changed.emit(listing)

        self.bridge.call(lambda: self.library.listing(keep=keep), done)

    @Slot(str, str)
    def rename(self, conversation_id: str, title: str) -> None:
        self.bridge.call(lambda: self.library.rename(conversation_id, title), self._refreshed)

    @Slot(str, str)
    def delete(self, conversation_id: str, _title: str) -> None:
        self._deleting.add(conversation_id)

        def failed(_message: str) -> None:
            self._deleting.discard(conversation_id)
            self.refresh()

        def after(_: Any) -> None:
            self._deleting.discard(conversation_id)
            if conversation_id == self.conversation_id and self.agent is not None:
                self.open(self.agent.name, None)  # the open one went: start a fresh one
            else:
                self.refresh()

        closed = self.bridge.let_go(conversation_id)  # one still answering unseen stops first

        async def delete() -> Any:
            await closed()
            return self.library.delete(conversation_id)

        self.bridge.call(delete, after, failed)

    @Slot(str)
    def restore(self, conversation_id: str) -> None:
        self.bridge.call(lambda: self.library.restore(conversation_id), self._refreshed)

    def _refreshed(self, _: Any) -> None:
        self.refresh()

    @Slot()
    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self.window.as_widget(), "The folder the agent works in"
        )
        if not folder:
            return
        self.workspace_override = Path(folder)
        self.library.save_settings(**{WORKSPACE: folder})
        self.window.show_folder(folder)
        self.window.show_setup_notice(
            "info", "Folder chosen", f"New conversations will work in {folder}."
        )

    # -- the window's place ----------------------------------------------------------------

    def _restore_window(self, settings: dict[str, Any]) -> None:
        """Size, position (when it is still on a screen) and maximized state, as saved."""
        saved = settings.get(GEOMETRY)
        window = self.window.as_widget()
        if isinstance(saved, dict):
            width, height = saved.get("width"), saved.get("height")
            if isinstance(width, int) and isinstance(height, int) and width > 200 < height:
                window.resize(width, height)
            x, y = saved.get("x"), saved.get("y")
            if isinstance(x, int) and isinstance(y, int) and QGuiApplication.screenAt(QPoint(x, y)):
                window.move(x, y)
            if saved.get("maximized") is True:
                window.setWindowState(Qt.WindowState.WindowMaximized)
        sizes = settings.get(SPLITTER)
        if isinstance(sizes, list) and all(isinstance(n, int) and n > 0 for n in sizes):
            self.window.restore_split(sizes)

    @Slot()
    def save_window(self) -> None:
        self.drafts.save_now()
        window = self.window.as_widget()
        normal = window.normalGeometry() if window.isMaximized() else window.geometry()
        geometry = {
            "x": normal.x(),
            "y": normal.y(),
            "width": normal.width(),
            "height": normal.height(),
            "maximized": window.isMaximized(),
        }
        self.library.save_settings(**{GEOMETRY: geometry, SPLITTER: self.window.split_sizes()})
