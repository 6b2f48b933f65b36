"""The context timeline: fill per request across the conversation, with the ladder's acts.

Each landed request is a point (its fill as a share of the window it was sent to); a
compaction, a trim or a clearing is a vertical marker between the requests it came between.
Dashed lines show the warn, critical and auto-compact marks of the current window. All
numbers come from the engine's report. Clicking a compaction's marker asks to see what it
replaced (`compaction_clicked` with the compaction's id).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QMouseEvent, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from desktop import theme
from engine.api import (
    ContextReport,
    TimelineMarker,
)

MARKER_LETTERS = {"compaction": "C", "trim": "T", "clear": "✂"}
MARKER_NAMES = {"compaction": "compaction", "trim": "trim", "clear": "clearing"}
CLICK_SLOP = 6  # pixels either side of a marker's line that still hit it


def legend_html() -> str:
    """The key under the chart: what each marker means, in its colour."""
    parts = []
    for kind in ("compaction", "trim", "clear"):
        colour = theme.MARKER_COLOURS[kind]
        mark = MARKER_LETTERS[kind] if kind != "clear" else "╵"
        parts.append(
            f"<span style='color:{colour}; font-weight:600'>{mark}</span> {MARKER_NAMES[kind]}"
        )
    return " · ".join(parts)


class TimelineChart(QWidget):
    compaction_clicked = Signal(str)  # a compaction marker was clicked (its compaction id)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._report: ContextReport | None = None
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)  # the pointer turns to a hand over a compaction marker

    def sizeHint(self) -> QSize:
        return QSize(260, 132)

    def set_report(self, report: ContextReport) -> None:
        self._report = report
        kinds = sorted({m.kind for m in report.markers})
        tip = f"{len(report.timeline)} requests"
        if kinds:
            tip += " · markers: " + ", ".join(f"{MARKER_LETTERS.get(k, '?')} {k}" for k in kinds)
        if "compaction" in kinds:
            tip += " · click a C marker to see what that compaction replaced"
        self.setToolTip(tip)
        self.update()

    def points(self) -> list[float]:
        """The plotted fill percentages, oldest first (for tests)."""
        report = self._report
        return [p.percent for p in report.timeline] if report else []

    def marker_kinds(self) -> list[str]:
        report = self._report
        return [m.kind for m in report.markers] if report else []

    def _plot(self) -> QRectF:
        return QRectF(28, 14, self.width() - 34, self.height() - 32)

    def marker_positions(self) -> list[tuple[float, TimelineMarker]]:
        """Each drawn marker's x, as painted (for clicks and tests)."""
        report = self._report
        if report is None or not report.timeline:
            return []
        plot, points = self._plot(), report.timeline
        first = points[0].request
        span = max(1, points[-1].request - first)

        def x_of(request: float) -> float:
            if len(points) == 1:
                return plot.center().x()
            return plot.left() + plot.width() * (request - first) / span

        return [
            (x_of(min(points[-1].request, max(first, m.after + 0.5))), m)
            for m in report.markers
            if m.after >= first - 1
        ]

    def mousePressEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        hits = [
            (abs(at - x), m)
            for at, m in self.marker_positions()
            if m.kind == "compaction" and m.ref and abs(at - x) <= CLICK_SLOP
        ]
        if hits:
            self.compaction_clicked.emit(min(hits, key=lambda hit: hit[0])[1].ref)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        near = any(
            m.kind == "compaction" and m.ref and abs(at - x) <= CLICK_SLOP
            for at, m in self.marker_positions()
        )
        self.setCursor(Qt.CursorShape.PointingHandCursor if near else Qt.CursorShape.ArrowCursor)
        super().mouseMoveEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        font = QFont(self.font())
        font.setPointSizeF(max(6.5, font.pointSizeF() * 0.8))
        painter.setFont(font)
        plot = self._plot()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.TOOL_BG))
        painter.drawRect(plot)
        painter.setPen(QColor(theme.MUTED))
        for share in (0, 50, 100):
            y = plot.bottom() - plot.height() * share / 100
            painter.drawText(0, int(y) + 4, f"{share}%")
        report = self._report
        if report is None or not report.timeline:
            painter.drawText(plot, Qt.AlignmentFlag.AlignCenter, "no requests yet")
            painter.end()
            return

        def y_of(percent: float) -> float:
            return plot.bottom() - plot.height() * max(0.0, min(100.0, percent)) / 100

        if report.window:
            for tokens, colour in (
                (report.warn_at, theme.WARN_MARK),
                (report.critical_at, theme.CRITICAL_MARK),
                (report.compact_at, theme.COMPACT_TEXT),
            ):
                pen = QPen(QColor(colour), 1, Qt.PenStyle.DashLine)
                painter.setPen(pen)
                y = y_of(100 * tokens / report.window)
                painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))

        points = report.timeline
        first = points[0].request
        span = max(1, points[-1].request - first)

        def x_of(request: float) -> float:
            if len(points) == 1:
                return plot.center().x()
            return plot.left() + plot.width() * (request - first) / span

        line = QPainterPath()
        area = QPainterPath()
        area.moveTo(QPointF(x_of(first), plot.bottom()))
        for index, point in enumerate(points):
            at = QPointF(x_of(point.request), y_of(point.percent))
            if index == 0:
                line.moveTo(at)
            else:
                line.lineTo(at)
            area.lineTo(at)
        area.lineTo(QPointF(x_of(points[-1].request), plot.bottom()))
        area.closeSubpath()
        fill = QColor(theme.FILL_OK)
        fill.setAlpha(50)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        painter.drawPath(area)
        painter.setPen(QPen(QColor(theme.FILL_OK), 1.6))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(line)
        if len(points) <= 60:
            painter.setBrush(QColor(theme.FILL_OK))
            painter.setPen(Qt.PenStyle.NoPen)
            for point in points:
                painter.drawEllipse(QPointF(x_of(point.request), y_of(point.percent)), 2.2, 2.2)

        # Clearing happens often and changes little: a short tick at the top. Compaction and
        # trimming rewrite the history: a line through the chart, lettered.
        for x, marker in sorted(self.marker_positions(), key=lambda p: p[1].kind != "clear"):
            colour = QColor(theme.MARKER_COLOURS.get(marker.kind, theme.MUTED))
            if marker.kind == "clear":
                painter.setPen(QPen(colour, 1.4))
                painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.top() + 7))
                continue
            painter.setPen(QPen(colour, 1.6))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            painter.setPen(colour)
            letter = MARKER_LETTERS.get(marker.kind, "?")
            painter.drawText(int(x) - 3, int(plot.top()) - 3, letter)

        painter.setPen(QColor(theme.MUTED))
        painter.drawText(
            int(plot.left()),
            int(plot.bottom()) + 14,
            f"request {first}",
        )
        last = f"{points[-1].request}"
        width = painter.fontMetrics().horizontalAdvance(last)
        painter.drawText(int(plot.right() - width), int(plot.bottom()) + 14, last)
        painter.end()
