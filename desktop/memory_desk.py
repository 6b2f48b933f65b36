"""Memory in the window: the review queue panel, the waiting badge, the review dialog, the
browser and `/learn`, over one memory root.

The desk reads the queue on the engine thread (through the bridge) whenever it may have
changed: at start, when the session says how many suggestions wait (at start and after each
turn), when a turn ends, and when the queue file changes on disk (`MemoryWatcher`, whose
callback arrives on a watchdog thread and crosses to the GUI thread as a queued signal).
The same watcher refreshes an open memory browser. Nothing here decides anything about
memory: accepting, rejecting and forgetting are the engine's `MemoryService`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from desktop.bridge import EngineBridge, SessionInfo
from desktop.learn_progress import LearnProgressDialog
from desktop.memory_browser import MemoryBrowser
from desktop.memory_review import MemoryReviewDialog
from desktop.memory_view import message_ref, scope_label
from desktop.ports import MemoryWindow
from desktop.shortcuts import add_shortcut
from engine.api import (
    DEFAULT_DEBOUNCE_S,
    INTENT_NAME,
    QUEUE_NAME,
    ErrorEvent,
    Event,
    LearnProgressEvent,
    MemoryService,
    MemorySuggestionsEvent,
    MemoryWatcher,
    ReviewResult,
    Suggestion,
)

if TYPE_CHECKING:
    from desktop.navigator import Navigator

log = logging.getLogger(__name__)

BROWSER_SHORTCUT = "Ctrl+Shift+M"
REVIEW_SHORTCUT = "Ctrl+Shift+R"


class MemoryDesk(QObject):
    queue_changed = Signal(object)  # list[Suggestion]: the queue as last read
    files_changed = Signal(object)  # list[str]: paths under the memory root that changed

    _changes_incoming = Signal(object)

    def __init__(
        self,
        window: MemoryWindow,
        bridge: EngineBridge,
        root: Path,
        *,
        navigator: Navigator | None = None,
        debounce_s: float = DEFAULT_DEBOUNCE_S,
    ) -> None:
        """The `window`'s review queue and badge, laid out and hidden, are shown and fed
        from here (`show_memory`, `show_suggestions`, `show_waiting`). The desk answers the
        window's memory requests (`/memory`, `/memory review`, `/learn`, the queue's and the
        badge's clicks) and its shortcuts, and the window is its dialogs' parent; the window
        says what a review did, selects a quoted message, and gives the composer the focus
        back after a review."""
        super().__init__(window.as_widget())
        self.window = window
        self.bridge = bridge
        self.navigator = navigator
        self.service = MemoryService(Path(root))
        self.review_dialog: MemoryReviewDialog | None = None
        self.browser: MemoryBrowser | None = None
        self.learn_dialog: LearnProgressDialog | None = None
        self.last_review: ReviewResult | None = None
        self.suggestions: list[Suggestion] = []
        self.reads = 0  # finished queue reads (tests wait on it)
        self._conversation = ""
        self._pending_scroll: tuple[str, str, str] | None = None
        self._reading = False
        self._read_again = False
        self._learning = False
        self._learn_failed = False
        self._closed = False

        window.show_memory(f"Review the waiting memory suggestions ({REVIEW_SHORTCUT})")
        window.memory_review_requested.connect(self.open_review)
        window.memory_browser_requested.connect(self.open_browser)
        window.learn_started.connect(self.show_learning)
        for text, shortcut, slot in (
            ("Memory…", BROWSER_SHORTCUT, self.open_browser),
            ("Review memory suggestions…", REVIEW_SHORTCUT, self.open_review),
        ):
            add_shortcut(window.as_widget(), text, shortcut, slot)

        bridge.event.connect(self._on_event)
        bridge.opened.connect(self._on_opened)
        bridge.turn_finished.connect(self._on_turn_finished)
        self._changes_incoming.connect(self._on_changes, Qt.ConnectionType.QueuedConnection)
        self.watcher = MemoryWatcher(
            self.service.root, self._changes_incoming.emit, debounce_s=debounce_s
        )
        try:
            self.watcher.start()
        except OSError:  # no inotify watch left, an unreadable root: refresh on events only
            log.warning("memory: cannot watch %s for changes", self.service.root, exc_info=True)
        self.refresh()

    def close(self) -> None:
        """Stop watching (the app is shutting down). Safe to call twice."""
        self._closed = True
        self.watcher.stop()

    # -- the queue --------------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        """Read the queue again and show it in the panel and the badge."""
        if self._closed:
            return
        if self._reading:
            self._read_again = True
            return
        service = self.service

        def read() -> tuple[list[Suggestion], dict[str, str]]:
            items = service.pending()
            return items, {s.scope: scope_label(service, s.scope) for s in items}

        self._reading = True
        if not self.bridge.call(read, self._read, self._read_failed):
            self._reading = False

    def _read(self, result: tuple[list[Suggestion], dict[str, str]]) -> None:
        self._reading = False
        self.reads += 1
        items, scopes = result
        self.suggestions = items
        self.window.show_suggestions(items, scopes)
        self.window.show_waiting(len(items))
        self.queue_changed.emit(items)
        if self._read_again:
            self._read_again = False
            self.refresh()

    def _read_failed(self, _message: str) -> None:
        self._reading = False

    # -- engine events ----------------------------------------------------------------------

    @Slot(object)
    def _on_event(self, event: Event) -> None:
        if isinstance(event, MemorySuggestionsEvent):
            self.window.show_waiting(event.pending)  # at once; the list follows
            self.refresh()
        elif isinstance(event, LearnProgressEvent):
            if self.learn_dialog is not None:
                self.learn_dialog.set_progress(event.step, event.steps, event.text)
        elif isinstance(event, ErrorEvent) and self._learning:
            self._learn_failed = True

    @Slot(object)
    def _on_opened(self, info: SessionInfo) -> None:
        self._conversation = info.conversation_id
        pending = self._pending_scroll
        if pending is not None and pending[0] == info.conversation_id:
            self._pending_scroll = None
            QTimer.singleShot(0, lambda: self._scroll_to(pending[1], pending[2]))

    @Slot()
    def _on_turn_finished(self) -> None:
        if self._learning:
            self._finish_learning()
        self.refresh()

    @Slot(object)
    def _on_changes(self, paths: list[str]) -> None:
        if self._closed:
            return
        if any(p in (QUEUE_NAME, INTENT_NAME) for p in paths):
            self.refresh()
        browser = self.browser
        if browser is not None and browser.isVisible() and any(_is_entry(p) for p in paths):
            browser.refresh()
        self.files_changed.emit(paths)

    # -- the review dialog ------------------------------------------------------------------

    @Slot()
    def open_review(self) -> MemoryReviewDialog:
        """The review dialog over the whole queue (one stays open at a time)."""
        current = self.review_dialog
        if current is not None and current.isVisible():
            current.raise_()
            current.activateWindow()
            return current
        if current is not None:
            current.deleteLater()
        dialog = MemoryReviewDialog(
            self.service, self.bridge.call, self.window.as_widget(), show_message=self.show_message
        )
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.reviewed.connect(self._reviewed)
        self.review_dialog = dialog
        dialog.open()
        dialog.load()
        return dialog

    @Slot(object)
    def _reviewed(self, result: ReviewResult) -> None:
        self.last_review = result
        parts = []
        if result.accepted:
            parts.append(f"{len(result.accepted)} accepted")
        if result.rejected:
            parts.append(f"{len(result.rejected)} rejected")
        waiting = result.left_waiting + len(result.failed)
        if waiting:
            parts.append(f"{waiting} still waiting")
        if parts:
            self.window.show_notice("Memory review: " + ", ".join(parts) + ".")
        self.refresh()
        self.window.focus_composer()

    def show_message(self, suggestion: Suggestion) -> str:
        """Bring the quoted message into view: scroll to it in this conversation, or open
        the conversation it came from. Returns what the review dialog should say."""
        conversation, message_id = message_ref(suggestion)
        if not conversation:
            return "This suggestion does not say which message it quotes."
        if conversation == self._conversation:
            if self._scroll_to(message_id, suggestion.quote):
                return "The message is selected in the conversation behind this dialog."
            return "That message is not shown in this conversation."
        navigator = self.navigator
        if navigator is None:
            return f"That message is in another conversation ({conversation[:12]})."
        if self.bridge.busy:
            return "A turn is running; the conversation can be opened once it ends."
        library = navigator.library
        self._pending_scroll = (conversation, message_id, suggestion.quote)

        def found(info: Any) -> None:
            dialog = self.review_dialog
            if info is None or not getattr(info, "agent", ""):
                self._pending_scroll = None
                if dialog is not None:
                    dialog.say("That conversation no longer exists.", error=True)
                return
            navigator.open(str(info.agent), conversation)

        self.bridge.call(lambda: library.conversation(conversation), found)
        return "Opening the conversation it came from…"

    def _scroll_to(self, message_id: str, quote: str) -> bool:
        return self.window.select_message(message_id, quote)

    # -- the browser ------------------------------------------------------------------------

    @Slot()
    def open_browser(self) -> MemoryBrowser:
        """The memory browser (one per window), read afresh each time it is shown."""
        browser = self.browser
        if browser is None:
            browser = MemoryBrowser(self.service, self.bridge.call, self.window.as_widget())
            browser.forgotten.connect(lambda _path: self.refresh())
            self.browser = browser
        browser.show()
        browser.raise_()
        browser.activateWindow()
        browser.refresh()
        return browser

    # -- /learn -----------------------------------------------------------------------------

    @Slot()
    def show_learning(self) -> None:
        """`/learn` went to the session: its pass runs with a progress dialog, then the
        review dialog opens over the whole queue."""
        self._learning = True
        self._learn_failed = False
        if self.learn_dialog is not None:
            self.learn_dialog.deleteLater()
        dialog = LearnProgressDialog(self.window.as_widget())
        dialog.cancel_requested.connect(self.bridge.cancel)
        self.learn_dialog = dialog
        dialog.open()

    def _finish_learning(self) -> None:
        self._learning = False
        dialog = self.learn_dialog
        cancelled = dialog is not None and dialog.cancelling
        if dialog is not None:
            dialog.finish()
        if not cancelled and not self._learn_failed:
            self.open_review()


def _is_entry(path: str) -> bool:
    """A change the browser shows: a scope's file or folder, not the hidden bookkeeping."""
    return not path.startswith(".") and "/." not in path
