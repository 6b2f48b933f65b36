"""The conversation window: sidebar, header, transcript, composer, context rail, overlays.

It builds and lays out its widgets and turns keystrokes and clicks into intents on the
bridge; the engine's events are drawn by its other half (desktop/window_events.py); every
decision about tokens, windows, turns and commands stays in the engine. Everything typed
goes to the session; a command whose answer is a view (`/agent`, `/memory`, `/new`) comes
back as a `ViewRequestEvent`, which the window turns into one of its intent signals for the
desk that opens that view.

The window owns its widgets, and its two modules alone write them. The desks (navigator,
agent editing, agents, memory, drafts) are handed the window as a port (desktop/ports.py):
its signals say what was asked of them, its intents (`show_error`, `name_agent`,
`put_draft`, `show_suggestions`) what the user should see.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMainWindow,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop import shortcuts, theme
from desktop.approval import ApprovalDialog, DialogApprover, OpenApprovals
from desktop.bridge import EngineBridge
from desktop.layout import FittedLayout, chat_column, rail_column
from desktop.memory_view import waiting_text
from desktop.shortcuts import add_shortcut
from desktop.stream_buffer import StreamBuffer
from desktop.widgets.banner import Banner
from desktop.widgets.composer import Composer
from desktop.widgets.composer_row import SendButton, StateHint
from desktop.widgets.context_rail import ContextRail
from desktop.widgets.header import HeaderBar
from desktop.widgets.load_progress import LoadProgress
from desktop.widgets.overlay import Overlay
from desktop.widgets.review_queue import ReviewQueuePanel
from desktop.widgets.sidebar import Sidebar
from desktop.widgets.transcript import TranscriptView
from desktop.window_events import EventRendering
from engine.api import (
    COMPACTION_RESTORE,
    COMPACTION_SHOW,
    CONTINUE_TEXT,
    VIEW_AGENT_EDITOR,
    VIEW_MEMORY_BROWSER,
    VIEW_MEMORY_REVIEW,
    VIEW_NEW_AGENT,
    VIEW_NEW_CONVERSATION,
    Listing,
    Suggestion,
    compaction_command,
)

RAIL_WIDTH = 310
SIDEBAR_WIDTH = 240
BADGE_STYLE = theme.style_sheet("memory_badge")


class MainWindow(EventRendering, QMainWindow):
    closing = Signal()  # the user closed the window (settings are saved on it)
    # Views the engine asked for (a ViewRequestEvent), and the same asked by a click; the
    # desks that own them connect here.
    agent_editor_requested = Signal()  # `/agent`: edit the current agent
    new_agent_requested = Signal()  # `/agent new`, the sidebar's New agent
    memory_browser_requested = Signal()  # `/memory`, the review queue's Browse
    memory_review_requested = Signal()  # `/memory review`, the queue's Review, the badge
    new_conversation_requested = Signal()  # `/new`: the session opened a new one (shown here)
    learn_started = Signal()  # `/learn` went to the session (its progress is a dialog)
    # The sidebar's requests, for the navigator and the agent desks.
    conversation_open_requested = Signal(str, object)  # agent, conversation id (None: new)
    conversation_rename_requested = Signal(str, str)  # conversation id, new title
    conversation_delete_requested = Signal(str, str)  # conversation id, its title
    conversation_restore_requested = Signal(str)  # conversation id: a delete's Undo
    folder_requested = Signal()
    edit_agent_requested = Signal(str)  # agent name
    duplicate_agent_requested = Signal(str)
    delete_agent_requested = Signal(str)
    restore_agent_requested = Signal(str)  # agent name: a delete's Undo
    draft_edited = Signal()  # the composer's text changed (the drafts save it)

    def __init__(
        self,
        bridge: EngineBridge,
        approver: DialogApprover | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("Brim")
        self.setStyleSheet(theme.STYLE_SHEET)
        self.resize(1280, 800)
        self._turns = 0
        self._shown_warnings: set[str] = set()
        self._conversation = ""
        self._approvals: OpenApprovals | None = None
        self._submission = ("", "")  # the id and text of the message whose turn runs

        self.header = HeaderBar()
        self.setup_banner = Banner()
        self.banner = Banner()
        self.load_progress = LoadProgress()
        self.transcript = TranscriptView()
        self.composer = Composer()
        self.send_button = SendButton()
        self.hint = StateHint()
        self.stream = StreamBuffer(parent=self)
        self.thought = StreamBuffer(parent=self)  # a thinking model's reasoning, apart
        self.sidebar = Sidebar()
        self.sidebar.setMinimumWidth(200)
        self.rail = ContextRail()
        self.rail.setObjectName("railBody")
        # Memory: laid out here, hidden; the memory desk (desktop/memory_desk.py) has them
        # shown and fed (show_memory, show_suggestions, show_waiting) when memory is on.
        self.review_queue = ReviewQueuePanel()
        self.review_queue.hide()
        self.memory_badge = QPushButton(objectName="memoryBadge")
        self.memory_badge.setCursor(Qt.CursorShape.PointingHandCursor)
        self.memory_badge.hide()
        self._view_signals = {
            VIEW_AGENT_EDITOR: self.agent_editor_requested,
            VIEW_NEW_AGENT: self.new_agent_requested,
            VIEW_MEMORY_BROWSER: self.memory_browser_requested,
            VIEW_MEMORY_REVIEW: self.memory_review_requested,
            VIEW_NEW_CONVERSATION: self.new_conversation_requested,
        }

        center = chat_column(
            [self.setup_banner, self.banner, self.load_progress],
            self.transcript,
            self.composer,
            self.send_button,
            [self.hint, self.memory_badge],
        )
        rail_frame = rail_column(self.rail, self.review_queue, RAIL_WIDTH)
        self.review_queue.fit_under(rail_frame, self.rail)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(center)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([SIDEBAR_WIDTH, 1280 - SIDEBAR_WIDTH - RAIL_WIDTH])
        self.splitter.setChildrenCollapsible(False)

        central = QWidget(objectName="central")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.splitter, 1)
        row.addWidget(rail_frame)
        # Below a width the rail folds and the sidebar collapses to icons: the chat keeps room.
        self.fitted = FittedLayout(self, row, self.sidebar, rail_frame, SIDEBAR_WIDTH, RAIL_WIDTH)
        self.fitted.connect_actions(self.sidebar.new_for_current, self.sidebar.edit_current)
        outer = QVBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self.header)
        outer.addLayout(row, 1)
        self.setCentralWidget(central)
        self.overlay = Overlay(central)
        self.overlay.closed.connect(self._overlay_closed)

        self.composer.submitted.connect(self._on_submitted)
        self.composer.cancel_requested.connect(self.cancel_turn)
        self.composer.textChanged.connect(self.draft_edited)
        self.send_button.clicked.connect(self._on_send_button)
        self.stream.flushed.connect(self.transcript.append_stream)
        self.thought.flushed.connect(self.transcript.append_thinking)
        self.transcript.compaction_requested.connect(self.show_compaction)
        self.transcript.continue_requested.connect(lambda: self._on_submitted(CONTINUE_TEXT))
        self.transcript.pin_requested.connect(self.lower_pin)
        self.rail.timeline.compaction_clicked.connect(self.show_compaction)
        self.rail.request_view_requested.connect(lambda: self._on_submitted("/context show"))
        self.banner.retry_requested.connect(self.retry)
        self.review_queue.review_requested.connect(self.memory_review_requested)
        self.review_queue.browse_requested.connect(self.memory_browser_requested)
        self.memory_badge.clicked.connect(self.memory_review_requested)
        sidebar = self.sidebar
        for asked, said in (
            (sidebar.open_requested, self.conversation_open_requested),
            (sidebar.rename_requested, self.conversation_rename_requested),
            (sidebar.delete_requested, self.conversation_delete_requested),
            (sidebar.restore_requested, self.conversation_restore_requested),
            (sidebar.folder_requested, self.folder_requested),
            (sidebar.edit_agent_requested, self.edit_agent_requested),
            (sidebar.new_agent_requested, self.new_agent_requested),
            (sidebar.duplicate_agent_requested, self.duplicate_agent_requested),
            (sidebar.delete_agent_requested, self.delete_agent_requested),
            (sidebar.restore_agent_requested, self.restore_agent_requested),
        ):
            asked.connect(said)
        bridge.event.connect(self.on_event)
        bridge.opened.connect(self.on_opened)
        bridge.open_failed.connect(self._on_open_failed)
        bridge.turn_finished.connect(self._on_turn_finished)
        bridge.busy_changed.connect(self._on_busy_changed)
        bridge.activity.connect(sidebar.set_activity)
        if approver is not None:
            self._approvals = OpenApprovals(approver, self)
            self._approvals.closed.connect(self.composer.setFocus)
        add_shortcut(
            self, "New conversation", shortcuts.NEW_CONVERSATION, self.sidebar.new_for_current
        )
        add_shortcut(self, "Back to the composer", shortcuts.FOCUS_COMPOSER, self.composer.setFocus)
        add_shortcut(
            self, "Rename conversation", shortcuts.RENAME_CONVERSATION, self.sidebar.rename_current
        )
        add_shortcut(self, "Edit agent", shortcuts.EDIT_AGENT, self.sidebar.edit_current)
        add_shortcut(self, "Quit", shortcuts.QUIT, self.close)
        self.stop_action = add_shortcut(
            self, "Stop the answer", shortcuts.STOP_ANSWER, self.cancel_turn
        )
        self.stop_action.setEnabled(False)
        self.composer.setFocus()

    # -- intents ----------------------------------------------------------------------------

    @Slot()
    def cancel_turn(self) -> None:
        if self.overlay.isVisible():
            # Esc reached the composer behind an open overlay (the overlay opened while the
            # window was not active, so the focus stayed put): it closes the overlay, and an
            # overlay never cancels the turn.
            self.overlay.close_overlay()
            return
        if self.bridge.busy:
            self.bridge.cancel()

    @Slot()
    def retry(self) -> None:
        if self.bridge.retry():
            self.banner.hide()

    @Slot(str)
    def _on_submitted(self, text: str) -> None:
        """Everything typed goes to the session, which says what it took (an AcceptedEvent:
        the composer clears, a message becomes the user's row) or why not (a busy error);
        until then the text stays in the composer."""
        if not self.bridge.send(text) and self.bridge.busy:
            # Another conversation or agent is opening: nothing went; the text waits here.
            self.banner.show_error("busy", "A conversation is opening; send again once it is open.")

    @Slot(str)
    def show_compaction(self, compaction: str) -> None:
        """A compaction row's Show / Restore, or its timeline marker: the engine answers with
        what that compaction replaced (a CompactionViewEvent, shown in the overlay)."""
        self._on_submitted(compaction_command(COMPACTION_SHOW, compaction))

    @Slot(str, bool)
    def _restore_compaction(self, compaction: str, confirmed: bool) -> None:
        self._on_submitted(compaction_command(COMPACTION_RESTORE, compaction, confirmed=confirmed))

    def new_conversation(self) -> None:
        """A new conversation of the current agent, keeping the engine loaded (scripted runs
        call it; a typed `/new` goes to the session, which opens it and says so)."""
        if self.bridge.busy:
            self.banner.show_error("busy", "A turn is still running; wait or cancel it first.")
            return
        if self.bridge.switch_conversation(None):
            self.composer.take_text()
            self.prepare_for_conversation()

    def prepare_for_conversation(self) -> None:
        """Another conversation is about to be shown: clear what belongs to this one."""
        self.stream.flush()
        self.thought.flush()
        self.transcript.clear_rows()
        self.banner.hide()
        self._turns = 0
        self.header.set_turn(0)
        self.header.clear_rate()  # the last answer's speed belongs to the conversation left
        # So do its numbers: the next conversation's report replaces them once it is open,
        # and a start that fails leaves none of them up.
        self.rail.clear()
        self.header.clear_context()
        self._shown_warnings.clear()

    @Slot()
    def _on_send_button(self) -> None:
        if self.bridge.busy:
            self.cancel_turn()
        else:
            self.composer.submit()
        self.composer.setFocus()

    # -- what the desks ask for: the intents of desktop/ports.py, which says what each does --

    def as_widget(self) -> QWidget:
        return self

    def typed(self) -> str:
        return self.composer.toPlainText()

    def put_draft(self, text: str) -> None:
        self.composer.setPlainText(text)
        self.composer.moveCursor(self.composer.textCursor().MoveOperation.End)

    def last_sent(self) -> str:
        return self.composer.last_sent()

    def send_message(self, text: str) -> None:
        self.composer.setPlainText(text)
        self.composer.submit()

    def focus_composer(self) -> None:
        self.composer.setFocus()

    def show_error(self, kind: str, text: str, *, retry: bool = False) -> None:
        self.banner.show_error(kind, text, retry=retry)

    def fail_start(self, kind: str, text: str, *, retry: bool = False) -> None:
        self.banner.show_error(kind, text, retry=retry)
        self.header.set_state("not started")

    def show_setup_notice(self, level: str, title: str, text: str) -> None:
        self.setup_banner.show_message(level, title, text)

    def clear_setup_notice(self, about: str) -> None:
        if self.setup_banner.isVisible() and about in self.setup_banner.text():
            self.setup_banner.hide()

    def name_agent(self, name: str, model: str) -> None:
        self.header.set_agent(name, model)

    def show_notice(self, text: str) -> None:
        self.transcript.add_notice(text)

    def select_message(self, message_id: str, quote: str) -> bool:
        return self.transcript.scroll_to_message(message_id, quote)

    def show_listing(self, listing: Listing, current: str | None) -> None:
        self.sidebar.set_listing(listing, current)

    def mark_current(self, agent: str, conversation_id: str) -> None:
        self.sidebar.set_current(agent, conversation_id)

    def show_folder(self, folder: str | None) -> None:
        self.sidebar.set_folder(folder)

    def offer_agent_undo(self, name: str) -> None:
        self.sidebar.show_agent_undo(name)

    def hide_sidebar(self) -> None:
        self.sidebar.hide()

    def split_sizes(self) -> list[int]:
        return list(self.splitter.sizes())

    def restore_split(self, sizes: list[int]) -> None:
        self.splitter.setSizes(sizes)

    def show_memory(self, review_tip: str) -> None:
        self.review_queue.show()
        self.memory_badge.setStyleSheet(BADGE_STYLE)
        self.memory_badge.setToolTip(review_tip)

    def show_suggestions(self, items: list[Suggestion], scopes: dict[str, str]) -> None:
        self.review_queue.set_suggestions(items, scopes)

    def show_waiting(self, count: int) -> None:
        self.memory_badge.setText(f"{waiting_text(count)}  ·  Review")
        self.memory_badge.setVisible(count > 0)

    def lower_pin(self, window: int) -> None:
        """A spill_choice answered with Lower the pin: the session lowers it (its notice
        says so); nothing to lower is said as a plain notice."""

        def told(lowered: object) -> None:
            if not lowered:
                self._notice("The pin could not be lowered: nothing larger is pinned.", "info")

        self.bridge.session_call(lambda s: s.lower_pin(window), told)

    def approval_dialog(self) -> ApprovalDialog | None:
        """The approval dialog open now, if any (for tests and screenshots)."""
        return self._approvals.current() if self._approvals is not None else None

    @Slot()
    def _overlay_closed(self) -> None:
        self.composer.setFocus()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.closing.emit()
        super().closeEvent(event)
