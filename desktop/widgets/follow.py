"""Whether the transcript follows its end, decided by what the reader did, not by where the
scroll bar happens to be.

Reading the bar's position after each insertion is not enough: a long message, a resize or a
rebuild relays the document out in steps, the bar's range shrinks and grows meanwhile, and a
view that was at the end finds itself "scrolled up" (pinned to the top of a long paste, or
thrown to the top by a resize). So the reader's own moves (wheel, drag, keys, the arrows)
alone decide whether the view follows; every change of the range then keeps a following view
at the end, and keeps a reader who scrolled up on the line they were reading. New text below
a reader who scrolled up shows a "Jump to latest" button.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextEdit, QToolButton

from desktop import theme

SLACK = 4  # pixels from the end that still count as "at the end"
JUMP_TEXT = "↓  Jump to latest"
JUMP_MARGIN = 14
JUMP_STYLE = (
    f"QToolButton#jumpToLatest {{ background: {theme.USER_ACCENT}; color: white; border: none;"
    " border-radius: 13px; padding: 5px 14px; font-weight: 600; }"
)


class EndFollower(QObject):
    following_changed = Signal(bool)

    def __init__(self, view: QTextEdit) -> None:
        super().__init__(view)
        self._view = view
        self._bar = view.verticalScrollBar()
        self._following = True
        self._anchor: int | None = None  # the document position at the top of the view
        self._adjusting = False
        self.jump = QToolButton(view, objectName="jumpToLatest")
        self.jump.setText(JUMP_TEXT)
        self.jump.setToolTip("New text arrived below: scroll to the end and follow it")
        self.jump.setCursor(Qt.CursorShape.PointingHandCursor)
        self.jump.setStyleSheet(JUMP_STYLE)
        self.jump.hide()
        self.jump.clicked.connect(self.follow_end)
        self._bar.actionTriggered.connect(self._on_reader_move)
        self._bar.rangeChanged.connect(self._on_range)
        view.installEventFilter(self)

    @property
    def following(self) -> bool:
        return self._following

    def follow_end(self) -> None:
        """Go to the end and follow it (the jump button, a conversation opened)."""
        self._anchor = None
        self._set_following(True)
        self._to_end()

    def stop_following(self) -> None:
        """The window brought some row into view (a memory suggestion's link)."""
        self._anchor = None
        self._set_following(False)

    def content_added(self) -> None:
        """Text arrived at the end: follow it, or say that it is there."""
        if self._following:
            self._to_end()
        elif self._bar.value() < self._bar.maximum() - SLACK:
            self._place_jump()
            self.jump.show()
            self.jump.raise_()

    def reader_moved(self) -> None:
        """The reader scrolled by some means the bar does not report (a key)."""
        self._on_reader_move(0)

    def _on_reader_move(self, _action: int) -> None:
        self._anchor = None
        # The bar's slider position is already where this move takes it.
        self._set_following(self._bar.sliderPosition() >= self._bar.maximum() - SLACK)

    def _set_following(self, following: bool) -> None:
        if following:
            self.jump.hide()
        if following != self._following:
            self._following = following
            self.following_changed.emit(following)

    def _on_range(self, _minimum: int, _maximum: int) -> None:
        if self._adjusting:
            return
        if self._following:
            self._to_end()
        elif self._anchor is not None:
            self._restore_anchor()

    def _to_end(self) -> None:
        self._set_value(self._bar.maximum())

    def _set_value(self, value: int) -> None:
        self._adjusting = True
        try:
            self._bar.setValue(value)
        finally:
            self._adjusting = False

    def _restore_anchor(self) -> None:
        if self._anchor is None:
            return
        document = self._view.document()
        position = min(self._anchor, max(0, document.characterCount() - 1))
        block = document.findBlock(position)
        if not block.isValid():
            return
        top = document.documentLayout().blockBoundingRect(block).top()
        layout = block.layout()
        line = layout.lineForTextPosition(position - block.position()) if layout else None
        if line is not None and line.isValid():
            top += line.y()
        self._set_value(int(top))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._view and event.type() == QEvent.Type.Resize:
            if not self._following:
                # Seen before the view relays out: where the reader is, in the old layout.
                if self._anchor is None:
                    self._anchor = self._view.cursorForPosition(QPoint(0, 0)).position()
                QTimer.singleShot(0, self._restore_anchor)
            else:
                QTimer.singleShot(0, self._after_resize)
            QTimer.singleShot(0, self._place_jump)
        return super().eventFilter(watched, event)

    def _after_resize(self) -> None:
        if self._following:
            self._to_end()

    def _place_jump(self) -> None:
        self.jump.adjustSize()
        viewport = self._view.viewport().geometry()
        x = viewport.x() + (viewport.width() - self.jump.width()) // 2
        y = viewport.bottom() - self.jump.height() - JUMP_MARGIN
        self.jump.move(max(0, x), max(0, y))


def top_position(view: QTextEdit) -> int:
    """The document position shown at the top of the view (for tests and anchors)."""
    cursor: QTextCursor = view.cursorForPosition(QPoint(0, 0))
    return cursor.position()
