"""The sidebar's marks beside a conversation: a turning arc while its answer is being written,
a dot when it finished while another conversation was shown.

Drawn as the item's icon, so the title (which a rename edits) stays the title. What each mark
means comes from the bridge (`EngineBridge.activity`); this only draws it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap

from desktop import theme

SIZE = 14
FRAMES = 12  # the arc's positions in one turn
FRAME_MS = 90
UNSEEN_COLOUR = theme.USER_ACCENT
WORKING_COLOUR = theme.ASSISTANT_ACCENT
WORDS = {"working": "working", "unseen": "finished, not yet seen"}


def _pixmap() -> tuple[QPixmap, QPainter]:
    pixmap = QPixmap(SIZE, SIZE)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    return pixmap, painter


def blank_icon() -> QIcon:
    """No mark, in a mark's room: the titles of marked and unmarked rows line up."""
    pixmap, painter = _pixmap()
    painter.end()
    return QIcon(pixmap)


def dot_icon() -> QIcon:
    pixmap, painter = _pixmap()
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(UNSEEN_COLOUR))
    painter.drawEllipse(QRectF(3, 3, SIZE - 6, SIZE - 6))
    painter.end()
    return QIcon(pixmap)


def arc_icon(frame: int) -> QIcon:
    pixmap, painter = _pixmap()
    pen = QPen(QColor(theme.TRACK), 2.0)
    painter.setPen(pen)
    box = QRectF(2, 2, SIZE - 4, SIZE - 4)
    painter.drawEllipse(box)
    pen.setColor(QColor(WORKING_COLOUR))
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    start = -int(frame * 360 / FRAMES) * 16  # Qt counts angles in 1/16 degree
    painter.drawArc(box, start, 100 * 16)
    painter.end()
    return QIcon(pixmap)


class ActivityMarks(QObject):
    """Which conversations are marked, and the arc's frame; `apply` paints them."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.marks: dict[str, str] = {}  # conversation id -> "working" | "unseen"
        self.frame = 0
        self._dot = dot_icon()
        self._blank = blank_icon()
        self._arcs = [arc_icon(i) for i in range(FRAMES)]
        self.timer = QTimer(self)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self._turn)
        self.changed = self.timer.timeout  # the sidebar repaints on each frame

    def set(self, conversation_id: str, activity: str) -> None:
        if activity:
            self.marks[conversation_id] = activity
        else:
            self.marks.pop(conversation_id, None)
        if "working" in self.marks.values():
            if not self.timer.isActive():
                self.timer.start()
        else:
            self.timer.stop()

    def icon(self, conversation_id: str) -> QIcon:
        mark = self.marks.get(conversation_id, "")
        if mark == "working":
            return self._arcs[self.frame]
        if mark == "unseen":
            return self._dot
        return self._blank

    def _turn(self) -> None:
        self.frame = (self.frame + 1) % FRAMES
