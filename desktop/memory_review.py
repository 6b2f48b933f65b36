"""The memory review dialog: the waiting suggestions, one page at a time, decided by the person.

The semantics are the terminal review's (engine/memory/review.py): a page shows at most
`REVIEW_PAGE_SIZE` suggestions; OK accepts the checked ones and rejects the rest of that
page, so nothing is rejected without having been on screen; Escape leaves that page and every
later one waiting. The pages are cut from the queue as it was when the dialog opened.

An accept can fail (the entry changed since the suggestion was made, its sentence was
revoked): the suggestion stays queued, and the page stays open with the reason on that item
until OK is pressed again, so the person sees what did not happen. Decisions run on the
engine thread; the dialog only shows them.

Keyboard: Up and Down move between items, Space toggles one, Ctrl+A checks all (or none),
Enter is OK, except that it never rejects a whole page (with nothing checked it only says
so), Escape leaves.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent, QKeySequence, QMouseEvent, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.memory_view import (
    Runner,
    flat,
    kind_label,
    message_ref,
    proposed_text,
    scope_label,
    whose_words,
)
from engine.api import (
    REVIEW_PAGE_SIZE,
    MemoryService,
    ReviewDecision,
    ReviewResult,
    Suggestion,
    parse_entry,
)

PAGE_HINT = (
    "Checked suggestions are written to memory; the rest of this page is rejected. "
    "Esc leaves this page and every later one waiting."
)
KEYS_HINT = "↑ ↓ move  ·  Space checks  ·  Ctrl+A all or none  ·  Enter OK  ·  Esc leaves"
KIND_COLOURS = {
    "fact": ("#dde9fb", "#1f5fbf"),
    "lesson": ("#dff3e6", "#1e6b3c"),
    "revision": ("#ece2fb", "#5b3a9b"),
}

STYLE = theme.style_sheet("memory_review")

# What a link in an item asks the window to do; returns "" when it showed the message, or a
# sentence saying why it could not.
ShowMessage = Callable[[Suggestion], str]


def _repolish(widget: QWidget) -> None:
    widget.style().unpolish(widget)
    widget.style().polish(widget)


class ReviewItem(QFrame):
    """One suggestion on a page: its checkbox, kind and scope, the proposed text, the user's
    quoted sentence with a link to its message, and (once decided) what happened."""

    message_requested = Signal(object)  # the Suggestion

    def __init__(self, suggestion: Suggestion, scope: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.suggestion = suggestion
        self.state = ""  # "" (undecided) | accepted | rejected | failed | gone
        self.setObjectName("reviewItem")
        self.check = QCheckBox()
        self.check.setAccessibleName(f"{kind_label(suggestion)}: {proposed_text(suggestion)}")
        self.check.setCursor(Qt.CursorShape.PointingHandCursor)

        background, colour = KIND_COLOURS.get(suggestion.kind, ("#e8ebf0", theme.MUTED))
        self.kind = QLabel(kind_label(suggestion), objectName="reviewKind")
        self.kind.setStyleSheet(
            f"background: {background}; color: {colour}; border-radius: 8px; "
            "padding: 1px 8px; font-weight: 600;"
        )
        self.scope = QLabel(f"{scope}  ·  {suggestion.subject}.md", objectName="reviewScope")
        self.scope.setToolTip(suggestion.path)
        self.text = QLabel(proposed_text(suggestion), objectName="reviewText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.was = QLabel("", objectName="reviewMuted")
        self.was.setWordWrap(True)
        if suggestion.against_text:
            now = parse_entry(suggestion.against_text).statement or suggestion.against_text
            lead = "It says now" if suggestion.action == "delete" else "Replaces"
            self.was.setText(f"{lead}: {flat(now, 240)}")
        self.was.setVisible(bool(self.was.text()))
        self.quote = QLabel(self._quote_html(), objectName="reviewQuote")
        self.quote.setWordWrap(True)
        self.quote.setTextFormat(Qt.TextFormat.RichText)
        self.quote.setTextInteractionFlags(
            Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.quote.linkActivated.connect(lambda _link: self.message_requested.emit(suggestion))
        self.quote.setVisible(bool(self.quote.text()))
        self.status = QLabel("", objectName="reviewStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.hide()

        top = QHBoxLayout()
        top.setSpacing(8)
        top.addWidget(self.kind)
        top.addWidget(self.scope, 1)
        body = QVBoxLayout()
        body.setSpacing(4)
        body.addLayout(top)
        body.addWidget(self.text)
        body.addWidget(self.was)
        body.addWidget(self.quote)
        body.addWidget(self.status)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 8, 12, 8)
        row.setSpacing(8)
        row.addWidget(self.check, 0, Qt.AlignmentFlag.AlignTop)
        row.addLayout(body, 1)

    def _quote_html(self) -> str:
        s = self.suggestion
        parts = []
        if s.quote:
            parts.append(f"<i>“{html.escape(flat(s.quote, 400))}”</i>")
        else:
            parts.append(html.escape(whose_words(s)))
            if s.reason and s.kind == "revision" and s.action != "delete":
                parts.append(f"Why: {html.escape(flat(s.reason, 300))}")
        conversation, _message = message_ref(s)
        if s.quote and conversation:
            parts.append(
                f'<a href="message" style="color:{theme.USER_ACCENT};">show the message</a>'
            )
        return "  ·  ".join(parts)

    @property
    def checked(self) -> bool:
        return self.check.isChecked()

    @property
    def decided(self) -> bool:
        return bool(self.state)

    def status_text(self) -> str:
        return self.status.text() if not self.status.isHidden() else ""

    def mark(self, state: str, text: str) -> None:
        """Show what happened to this suggestion; a decided item can no longer be changed."""
        self.state = state
        self.setProperty("state", state)
        self.status.setProperty("state", state)
        self.status.setText(text)
        self.status.show()
        self.check.setEnabled(False)
        _repolish(self)
        _repolish(self.status)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self.check.isEnabled():
            self.check.toggle()
            self.check.setFocus()
            event.accept()
            return
        super().mousePressEvent(event)


class MemoryReviewDialog(QDialog):
    """The review checklist. `reviewed` carries a `ReviewResult` once it closes, whichever
    way (every page decided, or left with Escape)."""

    reviewed = Signal(object)  # ReviewResult

    def __init__(
        self,
        service: MemoryService,
        run: Runner,
        parent: QWidget | None = None,
        *,
        page_size: int = REVIEW_PAGE_SIZE,
        show_message: ShowMessage | None = None,
        title: str = "Review memory suggestions",
    ) -> None:
        super().__init__(parent)
        self.service = service
        self._run = run
        self._show_message = show_message
        self.page_size = max(1, page_size)
        self.result = ReviewResult()
        self._pages: list[list[Suggestion]] = []
        self._page = 0
        self._items: list[ReviewItem] = []
        self._busy = False
        self._held = False  # a failed accept keeps the page open until OK again
        self._leave_when_done = False
        self._finished = False
        self.setObjectName("memoryReview")
        self.setWindowTitle(title)
        self.setStyleSheet(STYLE)
        self.resize(780, 660)

        self.heading = QLabel("Reading the waiting suggestions…", objectName="reviewHeading")
        self.hint = QLabel(PAGE_HINT, objectName="reviewMuted")
        self.hint.setWordWrap(True)
        self.page_widget = QWidget(objectName="reviewPage")
        self.page_layout = QVBoxLayout(self.page_widget)
        self.page_layout.setContentsMargins(0, 0, 6, 0)
        self.page_layout.setSpacing(8)
        self.page_layout.addStretch(1)
        self.scroll = QScrollArea(objectName="reviewScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.page_widget)
        self.scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the items take it, one by one
        self.footer = QLabel("", objectName="reviewFooter")
        self.footer.setWordWrap(True)
        self.keys = QLabel(KEYS_HINT, objectName="reviewMuted")

        self.all_button = QPushButton("Check all", objectName="reviewFlat")
        self.leave_button = QPushButton("Leave waiting", objectName="reviewFlat")
        self.leave_button.setToolTip("Esc: this page and every later one stay waiting")
        self.ok_button = QPushButton("OK", objectName="reviewOk")
        for button in (self.all_button, self.leave_button):
            button.setAutoDefault(False)
            button.setDefault(False)
        self.ok_button.setAutoDefault(False)
        self.ok_button.setDefault(True)
        self.all_button.clicked.connect(self.toggle_all)
        self.leave_button.clicked.connect(self.reject)
        self.ok_button.clicked.connect(self.confirm_page)
        QShortcut(QKeySequence("Ctrl+A"), self, activated=self.toggle_all)

        buttons = QHBoxLayout()
        buttons.addWidget(self.all_button)
        buttons.addStretch(1)
        buttons.addWidget(self.leave_button)
        buttons.addWidget(self.ok_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 16, 18, 14)
        layout.setSpacing(8)
        layout.addWidget(self.heading)
        layout.addWidget(self.hint)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.footer)
        layout.addLayout(buttons)
        layout.addWidget(self.keys)
        self._set_busy(True)

    # -- loading ----------------------------------------------------------------------------

    def load(self) -> None:
        """Read the queue (on the engine thread) and show its first page."""
        self._set_busy(True)
        if not self._run(self.service.pending, self.set_suggestions, self._load_failed):
            self._load_failed("The engine has stopped; the queue could not be read.")

    @Slot(object)
    def set_suggestions(self, items: list[Suggestion]) -> None:
        """Cut the pages from these suggestions and show the first."""
        size = self.page_size
        self._pages = [list(items[i : i + size]) for i in range(0, len(items), size)]
        self._page = 0
        self._set_busy(False)
        self._show_page()

    def _load_failed(self, message: str) -> None:
        self._set_busy(False)
        self.heading.setText("The review queue could not be read")
        self.say(message, error=True)
        self.ok_button.setText("Close")
        self._pages = []

    # -- what is on screen ------------------------------------------------------------------

    @property
    def page_index(self) -> int:
        return self._page

    @property
    def page_count(self) -> int:
        return len(self._pages)

    @property
    def busy(self) -> bool:
        return self._busy

    def items(self) -> list[ReviewItem]:
        """The items of the page on screen."""
        return list(self._items)

    def _show_page(self) -> None:
        for item in self._items:
            self.page_layout.removeWidget(item)
            item.deleteLater()
        self._items = []
        self._held = False
        self.say("")
        if not self._pages:
            self.heading.setText("No memory suggestions are waiting")
            self.hint.setText(
                "Suggestions appear here after compaction, /learn, or a closed "
                "conversation's reflection."
            )
            self.ok_button.setText("Close")
            self.all_button.setEnabled(False)
            self.ok_button.setFocus()
            return
        page = self._pages[self._page]
        total = sum(len(p) for p in self._pages)
        self.heading.setText(
            f"Page {self._page + 1} of {len(self._pages)}  ·  "
            f"{total} suggestion{'' if total == 1 else 's'} waiting"
        )
        self.hint.setText(PAGE_HINT)
        self.all_button.setEnabled(True)
        for suggestion in page:
            item = ReviewItem(suggestion, scope_label(self.service, suggestion.scope))
            item.check.toggled.connect(self._update_ok)
            item.check.installEventFilter(self)
            item.message_requested.connect(self._open_message)
            self.page_layout.insertWidget(self.page_layout.count() - 1, item)
            item.show()  # now, so it can take the focus at once
            self._items.append(item)
        self.scroll.verticalScrollBar().setValue(0)
        self._update_ok()
        self._items[0].check.setFocus()

    @Slot()
    def _update_ok(self) -> None:
        if not self._pages:
            return
        if self._held:
            last = self._page + 1 >= len(self._pages)
            self.ok_button.setText("Done" if last else "Next page")
            return
        open_items = [i for i in self._items if not i.decided]
        accept = sum(1 for i in open_items if i.checked)
        reject = len(open_items) - accept
        if accept and reject:
            text = f"Accept {accept}, reject {reject}"
        elif accept:
            text = f"Accept {accept}"
        else:
            text = f"Reject {reject}" if reject else "OK"
        self.ok_button.setText(text)
        everything = bool(open_items) and accept == len(open_items)
        self.all_button.setText("Check none" if everything else "Check all")

    def say(self, text: str, *, error: bool = False) -> None:
        self.footer.setText(text)
        self.footer.setProperty("state", "error" if error else "")
        _repolish(self.footer)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.ok_button.setEnabled(not busy)
        self.all_button.setEnabled(not busy and bool(self._pages))

    # -- deciding ---------------------------------------------------------------------------

    @Slot()
    def toggle_all(self) -> None:
        open_items = [i for i in self._items if not i.decided]
        if self._busy or not open_items:
            return
        state = not all(i.checked for i in open_items)
        for item in open_items:
            item.check.setChecked(state)

    @Slot()
    def confirm_page(self) -> None:
        """OK: accept the checked items and reject the rest of this page (then the next page),
        or, after a failed accept was shown, go on."""
        if self._busy:
            return
        if not self._pages:
            self._finish(QDialog.DialogCode.Accepted)
            return
        if self._held:
            self._advance()
            return
        open_items = [i for i in self._items if not i.decided]
        accept = [i.suggestion.id for i in open_items if i.checked]
        reject = [i.suggestion.id for i in open_items if not i.checked]
        service = self.service

        def decide() -> tuple[list[ReviewDecision], list[ReviewDecision]]:
            accepted = service.accept(accept) if accept else []
            rejected = service.reject(reject) if reject else []
            return accepted, rejected

        self._set_busy(True)
        self.say("Writing your decisions…")
        if not self._run(decide, self._decided, self._decide_failed):
            self._decide_failed("The engine has stopped; nothing was decided.")

    def _decided(self, outcome: tuple[list[ReviewDecision], list[ReviewDecision]]) -> None:
        accepted, rejected = outcome
        by_id = {i.suggestion.id: i for i in self._items}
        failures = 0
        for d in accepted:
            item = by_id.get(d.id)
            if d.ok:
                self.result.accepted.append(d.id)
                if item is not None:
                    item.mark("accepted", f"✓ Accepted: written to {d.path}")
            else:
                failures += 1
                self.result.failed.append((d.id, d.message))
                if item is not None:
                    item.mark("failed", f"✕ Not accepted; it stays waiting. {d.message}")
        for d in rejected:
            item = by_id.get(d.id)
            if d.ok:
                self.result.rejected.append(d.id)
                if item is not None:
                    item.mark("rejected", "Rejected")
            elif item is not None:
                item.mark("gone", f"Not rejected: {d.message}")
        self._set_busy(False)
        if self._leave_when_done:
            self._leave()
            return
        if failures:
            self._held = True
            noun = "suggestion" if failures == 1 else "suggestions"
            self.say(
                f"{failures} {noun} could not be accepted and stay waiting (the reason is on "
                "the item). OK goes on.",
                error=True,
            )
            self._update_ok()
            self.ok_button.setFocus()
            return
        self._advance()

    def _decide_failed(self, message: str) -> None:
        self._set_busy(False)
        self.say(f"Nothing on this page was decided: {message}", error=True)
        if self._leave_when_done:
            self._leave()

    def _advance(self) -> None:
        if self._page + 1 >= len(self._pages):
            self._finish(QDialog.DialogCode.Accepted)
            return
        self._page += 1
        self._show_page()

    # -- leaving ----------------------------------------------------------------------------

    @Slot()
    def reject(self) -> None:
        """Escape, Leave waiting, or the window's close button: this page and every later one
        stay waiting. A decision already on its way finishes first."""
        if self._finished:
            super().reject()
            return
        if self._busy and self._items:
            self._leave_when_done = True
            self.say("Leaving once the decisions on this page are written…")
            return
        self._leave()

    def _leave(self) -> None:
        undecided = [i for i in self._items if not i.decided]
        later = self._pages[self._page + 1 :] if self._pages else []
        self.result.left_waiting = len(undecided) + sum(len(p) for p in later)
        self._finish(QDialog.DialogCode.Rejected)

    def _finish(self, code: QDialog.DialogCode) -> None:
        if self._finished:
            return
        self._finished = True
        self.reviewed.emit(self.result)
        self.done(code)

    # -- keys and links ---------------------------------------------------------------------

    def _enter_would_reject_all(self) -> bool:
        """Enter on a page where nothing is checked would reject every suggestion on it: a
        keystroke too easy to make for a decision that cannot be taken back."""
        if self._busy or self._held or not self._pages:
            return False
        open_items = [i for i in self._items if not i.decided]
        return bool(open_items) and not any(i.checked for i in open_items)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._enter_would_reject_all():
            self.say(
                "Nothing is checked, so Enter rejected nothing. Space checks a suggestion to "
                f"keep it; the “{self.ok_button.text()}” button rejects this page."
            )
            event.accept()
            return
        super().keyPressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            for item in self._items:
                if item.check is watched:
                    item.setProperty("focused", event.type() == QEvent.Type.FocusIn)
                    _repolish(item)
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down) and not event.modifiers():
                self._move_focus(watched, -1 if key == Qt.Key.Key_Up else 1)
                return True
            if key == Qt.Key.Key_A and event.modifiers() == Qt.KeyboardModifier.ControlModifier:
                self.toggle_all()  # the shortcut, when the window system did not deliver it
                return True
        return super().eventFilter(watched, event)

    def _move_focus(self, current: QObject, step: int) -> None:
        checks = [i.check for i in self._items]
        if current not in checks:
            return
        index = checks.index(current)  # type: ignore[arg-type]
        target = index + step
        if 0 <= target < len(checks):
            checks[target].setFocus(Qt.FocusReason.TabFocusReason)
            self.scroll.ensureWidgetVisible(self._items[target], 0, 12)

    @Slot(object)
    def _open_message(self, suggestion: Suggestion) -> None:
        if self._show_message is None:
            self.say("Messages cannot be shown from here.", error=True)
            return
        problem = self._show_message(suggestion)
        self.say(problem, error=bool(problem))
