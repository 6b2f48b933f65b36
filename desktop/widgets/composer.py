"""The composer: Enter sends, Shift+Enter starts a new line, Esc cancels, Up recalls.

It only says what the user asked for (`submitted`, `cancel_requested`); whether a turn can
start is the window's business.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFontMetrics, QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

MIN_LINES = 1
MAX_LINES = 8


class Composer(QPlainTextEdit):
    submitted = Signal(str)
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setPlaceholderText("Message the agent — Enter sends, Shift+Enter for a new line")
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._last_sent = ""
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        mods = event.modifiers()
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
        self._last_sent = text
        self.submitted.emit(text)

    def take_text(self) -> str:
        """Clear the composer once the window has accepted the message."""
        text = self.toPlainText()
        self.clear()
        return text

    def _fit_height(self, *_: object) -> None:
        metrics = QFontMetrics(self.font())
        lines = max(MIN_LINES, min(MAX_LINES, int(self.document().size().height())))
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * metrics.lineSpacing() + frame + 2)
