"""The composer: Enter sends, Shift+Enter starts a new line, Esc cancels, Up recalls.

Typing `/` offers the slash commands the engine knows (engine/commands.py) in a popup; Tab or
Enter takes the highlighted one. The composer only says what the user asked for
(`submitted`, `cancel_requested`); whether a turn can start is the window's business. Enter on
a complete command sends it even while the popup offers a longer one (`/work` vs `/work clear`).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QRect, Qt, QTimer, Signal, Slot
from PySide6.QtGui import (
    QFontMetrics,
    QKeyEvent,
    QResizeEvent,
    QStandardItem,
    QStandardItemModel,
)
from PySide6.QtWidgets import QAbstractItemView, QCompleter, QPlainTextEdit, QTreeView, QWidget

from engine.api import (
    COMMANDS,
    completions,
    parse_command,
)

MIN_LINES = 1
MAX_LINES = 8

_POPUP_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape, Qt.Key.Key_Tab)


POPUP_GAP = 24  # pixels between a command and its description
POPUP_ROWS = 10  # rows shown before the popup scrolls


class Composer(QPlainTextEdit):
    submitted = Signal(str)
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setPlaceholderText(
            "Message the agent — Enter sends, Shift+Enter for a new line, / for commands"
        )
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._last_sent = ""
        self._completer = self._make_completer()
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.textChanged.connect(self._update_completion)
        self._fit_height()

    # -- completion ------------------------------------------------------------------------

    def _make_completer(self) -> QCompleter:
        model = QStandardItemModel(0, 2, self)
        for command in COMMANDS:
            model.appendRow([QStandardItem(command.text), QStandardItem(command.description)])
        completer = QCompleter(self)
        completer.setModel(model)
        completer.setCompletionColumn(0)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        popup = QTreeView()
        popup.setHeaderHidden(True)
        popup.setRootIsDecorated(False)
        popup.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        popup.setObjectName("commandPopup")
        completer.setPopup(popup)
        completer.setWidget(self)
        completer.activated.connect(self._take_completion)
        return completer

    def completion_visible(self) -> bool:
        return self._completer.popup().isVisible()

    def completion_candidates(self) -> list[str]:
        """What the popup offers now (empty when it is hidden)."""
        if not self.completion_visible():
            return []
        model = self._completer.completionModel()
        return [model.index(row, 0).data() for row in range(model.rowCount())]

    @Slot()
    def _update_completion(self) -> None:
        text = self.toPlainText()
        if "\n" in text or not completions(text):
            self._completer.popup().hide()
            return
        self._completer.setCompletionPrefix(" ".join(text.split()))
        popup = self._completer.popup()
        popup.setCurrentIndex(self._completer.completionModel().index(0, 0))
        self._completer.complete(self.cursorRect())
        if isinstance(popup, QTreeView):
            self._place_popup(popup)

    def _place_popup(self, popup: QTreeView) -> None:
        """Wide enough for each command and its description, above the composer (which sits
        at the window's bottom), and inside the window."""
        model = self._completer.completionModel()
        rows = model.rowCount()
        if not rows:
            return
        metrics = popup.fontMetrics()
        widest = [
            max(metrics.horizontalAdvance(str(model.index(r, c).data() or "")) for r in range(rows))
            for c in (0, 1)
        ]
        window = self.window()
        area = QRect(window.mapToGlobal(QPoint(0, 0)), window.size()).adjusted(8, 8, -8, -8)
        popup.setColumnWidth(0, widest[0] + POPUP_GAP)
        frame = 2 * popup.frameWidth()
        scroll = popup.verticalScrollBar().sizeHint().width() if rows > POPUP_ROWS else 0
        width = min(widest[0] + widest[1] + 2 * POPUP_GAP + frame + scroll, area.width())
        row_height = max(popup.sizeHintForRow(0), metrics.height())
        height = min(min(rows, POPUP_ROWS) * row_height + frame, area.height())
        top_left = self.mapToGlobal(QPoint(0, 0))
        x = max(area.left(), min(top_left.x(), area.right() - width))
        y = max(area.top(), top_left.y() - height - 4)
        popup.setGeometry(x, y, width, height)

    @Slot(str)
    def _take_completion(self, text: str) -> None:
        self.blockSignals(True)
        self.setPlainText(text)
        self.blockSignals(False)
        self.moveCursor(self.textCursor().MoveOperation.End)
        self._completer.popup().hide()

    # -- keys ------------------------------------------------------------------------------

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        mods = event.modifiers()
        exact = parse_command(self.toPlainText()) is not None
        enter = key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if self.completion_visible() and key in _POPUP_KEYS and not (enter and exact):
            if key == Qt.Key.Key_Escape:
                self._completer.popup().hide()
            else:
                index = self._completer.popup().currentIndex()
                if index.isValid():
                    self._take_completion(index.sibling(index.row(), 0).data())
            event.accept()
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if mods & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")  # a real newline, not Qt's soft line separator
            else:
                self.submit()
            event.accept()
            return
        if key == Qt.Key.Key_Escape:
            self.cancel_requested.emit()
            event.accept()
            return
        if key == Qt.Key.Key_Up and not self.toPlainText() and self._last_sent:
            self.setPlainText(self._last_sent)
            self.moveCursor(self.textCursor().MoveOperation.End)
            event.accept()
            return
        super().keyPressEvent(event)

    def event(self, event: QEvent) -> bool:
        # Tab would otherwise move the focus before keyPressEvent sees it.
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Tab
            and self.completion_visible()
        ):
            self.keyPressEvent(event)
            return True
        # Esc would otherwise be eaten as a shortcut override before keyPressEvent sees it.
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
        ):
            event.accept()
            return True
        return super().event(event)

    def submit(self) -> None:
        text = self.toPlainText()
        if not text.strip():
            return
        self._completer.popup().hide()
        self._last_sent = text
        self.submitted.emit(text)

    def last_sent(self) -> str:
        """The text most recently submitted (what a refused message puts back)."""
        return self._last_sent

    def take_text(self) -> str:
        """Clear the composer once the window has accepted the message."""
        text = self.toPlainText()
        self.clear()
        return text

    def put_back(self, text: str) -> None:
        """A message that was not sent returns, before what was typed since (unless that
        already holds it)."""
        typed = self.toPlainText()
        if text not in typed:
            self.setPlainText(text + ("\n\n" + typed if typed else ""))

    def placeholder_lines(self) -> int:
        """How many lines the placeholder takes at the composer's width (it wraps in a narrow
        window, and the empty composer must be tall enough to show all of it)."""
        if not self.document().isEmpty() or not self.placeholderText():
            return 0
        metrics = QFontMetrics(self.font())
        margin = int(self.document().documentMargin() * 2)
        width = max(1, self.viewport().width() - margin)
        flags = int(Qt.TextFlag.TextWordWrap)
        rect = metrics.boundingRect(0, 0, width, 10_000, flags, self.placeholderText())
        return -(-rect.height() // metrics.lineSpacing())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            # After this resize is laid out: a height set from inside it leaves the
            # viewport at the old height.
            QTimer.singleShot(0, self, self._fit_height)

    def _fit_height(self, *_: object) -> None:
        metrics = QFontMetrics(self.font())
        lines = max(int(self.document().size().height()), self.placeholder_lines())
        lines = max(MIN_LINES, min(MAX_LINES, lines))
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * metrics.lineSpacing() + frame + 2)
