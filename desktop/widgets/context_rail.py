"""The context rail: how full the window is, where the ladder's marks sit, what fills it.

It draws an `engine.report.context_report.ContextReport` and computes nothing of its own: the
percentages, marks, headroom, categories and cache lines all come from the engine. The same
widget shows the live rail beside the conversation and the frozen snapshot in the `/context`
overlay."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
    QTextDocumentFragment,
)
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from desktop import theme
from desktop.widgets.timeline import TimelineChart, legend_html
from engine.api import (
    ContextReport,
    format_tokens,
)

LEVEL_COLOURS = {"ok": theme.FILL_OK, "warn": theme.FILL_WARN, "critical": theme.FILL_CRITICAL}


def headline(report: ContextReport) -> str:
    """`37% full · 3K of 8K · next request` (with `estimated` when it is Brim's count, not
    the engine's): which request the figure describes is always said."""
    if not report.window:
        return "window not known yet"
    text = (
        f"{report.percent:.0f}% full · {format_tokens(report.used)} of "
        f"{format_tokens(report.window)}"
    )
    return text + (" · estimated" if report.estimated else "") + f" · {report.describes}"


EMPTY_REPORT = ContextReport(window=None, source="", used=0, estimated=True)


class FillBar(QWidget):
    """The bar: fill to current usage with a ▲ marker under it, ticks at the warn and critical
    marks, the auto-compact reserve zone hatched at the right end, a token scale below."""

    BAR_TOP = 4
    BAR_HEIGHT = 16

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._report: ContextReport | None = None
        self.setMinimumHeight(52)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(260, 52)

    def set_report(self, report: ContextReport) -> None:
        self._report = report
        window = report.window or 0
        if window:
            self.setToolTip(
                f"warn at {report.warn_at:,} · critical at {report.critical_at:,} · "
                f"auto-compact at {report.compact_at:,} · reserve {report.reserve:,} tokens"
            )
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width = self.width() - 8
        left = 4.0
        bar = QRectF(left, self.BAR_TOP, width, self.BAR_HEIGHT)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.TRACK))
        painter.drawRoundedRect(bar, 4, 4)
        report = self._report
        if report is None or not report.window:
            painter.end()
            return
        window = report.window

        def x_of(tokens: int) -> float:
            return left + width * max(0.0, min(1.0, tokens / window))

        # The reserve zone: from the compaction threshold to the end of the window.
        start = x_of(report.compact_at)
        reserve = QRectF(start, bar.top(), bar.right() - start, bar.height())
        painter.setBrush(QBrush(QColor(theme.RESERVE), Qt.BrushStyle.BDiagPattern))
        painter.drawRect(reserve)
        # The fill.
        painter.setBrush(QColor(LEVEL_COLOURS.get(report.level, theme.FILL_OK)))
        fill = QRectF(bar.left(), bar.top(), x_of(report.used) - bar.left(), bar.height())
        if fill.width() > 0:
            painter.drawRoundedRect(fill, 4, 4)
        # The marks.
        for tokens, colour in (
            (report.warn_at, theme.WARN_MARK),
            (report.critical_at, theme.CRITICAL_MARK),
            (report.compact_at, theme.COMPACT_TEXT),
        ):
            pen = QPen(QColor(colour), 2)
            painter.setPen(pen)
            x = x_of(tokens)
            painter.drawLine(int(x), int(bar.top()) - 3, int(x), int(bar.bottom()) + 3)
        # The ▲ marker at current usage.
        x = x_of(report.used)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.TEXT))
        top = bar.bottom() + 3
        painter.drawPolygon(QPolygonF([_pt(x, top), _pt(x - 5, top + 7), _pt(x + 5, top + 7)]))
        # The scale.
        painter.setPen(QColor(theme.MUTED))
        font = QFont(self.font())
        font.setPointSizeF(max(6.5, font.pointSizeF() * 0.8))
        painter.setFont(font)
        baseline = int(bar.bottom()) + 24
        for share, align in ((0.0, "left"), (0.5, "center"), (1.0, "right")):
            label = format_tokens(int(window * share))
            text_width = painter.fontMetrics().horizontalAdvance(label)
            x_pos = left + width * share
            if align == "center":
                x_pos -= text_width / 2
            elif align == "right":
                x_pos -= text_width
            painter.drawText(int(x_pos), baseline, label)
        painter.end()


def _pt(x: float, y: float) -> QPointF:
    return QPointF(x, y)


class BreakdownView(QWidget):
    """One row per category: name, tokens, and a bar scaled to the largest row."""

    ROW_HEIGHT = 24

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[str, int]] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_rows(self, rows: list[tuple[str, int]]) -> None:
        self._rows = list(rows)
        self.setFixedHeight(max(1, len(self._rows)) * self.ROW_HEIGHT)
        self.update()

    def rows(self) -> list[tuple[str, int]]:
        return list(self._rows)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width = self.width() - 8
        biggest = max((tokens for _, tokens in self._rows), default=0) or 1
        metrics = painter.fontMetrics()
        for index, (name, tokens) in enumerate(self._rows):
            top = index * self.ROW_HEIGHT
            value = f"{tokens:,}"
            value_width = metrics.horizontalAdvance(value)
            painter.setPen(QColor(theme.TEXT if tokens else theme.MUTED))
            shown = metrics.elidedText(name, Qt.TextElideMode.ElideRight, width - value_width - 12)
            painter.drawText(4, top + 13, shown)
            painter.drawText(4 + width - value_width, top + 13, value)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(theme.TRACK))
            painter.drawRoundedRect(QRectF(4, top + 17, width, 4), 2, 2)
            if tokens:
                colour = theme.TOOL_TEXT if name.startswith("Tool results") else theme.FILL_OK
                painter.setBrush(QColor(colour))
                share = max(0.01, tokens / biggest)
                painter.drawRoundedRect(QRectF(4, top + 17, width * share, 4), 2, 2)
        painter.end()


class ContextRail(QFrame):
    """Fill, bar, headroom, cache lines, breakdown and (optionally) the timeline."""

    request_view_requested = Signal()  # "What the model saw": the last request, part by part

    def __init__(
        self, *, timeline: bool = True, stretch: bool = True, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._report: ContextReport | None = None
        self.title = QLabel("CONTEXT", objectName="sectionTitle")
        self.source_label = QLabel("", objectName="railMuted")
        self.headline_label = QLabel("waiting for the engine", objectName="railHeadline")
        # "9% full · 3K of 32K · estimated · next request" is wider than the rail: it wraps
        # instead of widening the rail past the window's edge.
        self.headline_label.setWordWrap(True)
        self.bar = FillBar()
        self.marks_label = QLabel("", objectName="railMuted")
        self.marks_label.setWordWrap(True)
        self.marks_label.setTextFormat(Qt.TextFormat.RichText)
        self.headroom_label = QLabel("", objectName="railValue")
        self.headroom_label.setWordWrap(True)
        self.cache_labels = [QLabel("", objectName="railMuted") for _ in range(2)]
        self.breakdown_title = QLabel("WHAT FILLS IT", objectName="sectionTitle")
        self.breakdown = BreakdownView()
        self.saw_button = QPushButton("What the model saw", objectName="railButton")
        self.saw_button.setToolTip(
            "The model's last request as the engine received it (/context show)"
        )
        self.saw_button.clicked.connect(self.request_view_requested)
        self.timeline_title = QLabel("TIMELINE", objectName="sectionTitle")
        self.timeline = TimelineChart()
        # The last request's row: what the engine's prompt cache served of it.
        self.timeline_row = QLabel("", objectName="railMuted")
        self.legend = QLabel(legend_html(), objectName="railMuted")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)  # a narrowed rail (desktop/layout.py) wraps it

        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(6)
        layout.addWidget(self.title)
        layout.addWidget(self.headline_label)
        layout.addWidget(self.source_label)
        layout.addWidget(self.bar)
        layout.addWidget(self.marks_label)
        layout.addWidget(self.headroom_label)
        for label in self.cache_labels:
            label.setWordWrap(True)
            label.hide()
            layout.addWidget(label)
        layout.addSpacing(8)
        layout.addWidget(self.breakdown_title)
        layout.addWidget(self.breakdown)
        layout.addWidget(self.saw_button)
        if timeline:
            layout.addSpacing(8)
            layout.addWidget(self.timeline_title)
            layout.addWidget(self.timeline)
            layout.addWidget(self.timeline_row)
            layout.addWidget(self.legend)
        else:
            self.timeline_title.hide()
            self.timeline.hide()
            self.timeline_row.hide()
            self.legend.hide()
        if stretch:
            layout.addStretch(1)

    def report(self) -> ContextReport | None:
        return self._report

    def clear(self) -> None:
        """No session to describe (a failed start): nothing of the conversation before."""
        self.set_report(EMPTY_REPORT)
        self._report = None
        self.headline_label.setText("waiting for the engine")

    def set_report(self, report: ContextReport) -> None:
        self._report = report
        self.headline_label.setText(headline(report))
        source = f"window source: {report.source}" if report.source else ""
        self.source_label.setText(source)
        self.bar.set_report(report)
        if report.window:

            def mark(name: str, tokens: int, colour: str) -> str:
                return f"<span style='color:{colour}'>▌</span>{name} {format_tokens(tokens)}"

            self.marks_label.setText(
                mark("warn", report.warn_at, theme.WARN_MARK)
                + " · "
                + mark("critical", report.critical_at, theme.CRITICAL_MARK)
                + "<br>"
                + mark("auto-compact", report.compact_at, theme.COMPACT_TEXT)
                + f" · reserve {format_tokens(report.reserve)} (hatched)"
            )
            self.headroom_label.setText(report.headroom_line())
        else:
            self.marks_label.setText("")
            self.headroom_label.setText("")
        shares = [report.cache_session, report.cache_last]
        lines = report.cache_lines()
        for index, label in enumerate(self.cache_labels):
            if index < len(lines):
                label.setText(lines[index])
                share = shares[index] if len(lines) == 2 else None
                alarm = share is not None and share.alarm
                label.setObjectName("cacheAlarm" if alarm else "railMuted")
                label.style().unpolish(label)
                label.style().polish(label)
                label.show()
            else:
                label.hide()
        self.breakdown.set_rows([(c.name, c.tokens) for c in report.categories])
        exact = report.exact_breakdown or not report.categories
        self.breakdown_title.setText("WHAT FILLS IT" if exact else "WHAT FILLS IT · ESTIMATED")
        self.breakdown_title.setToolTip(
            "" if exact else "Counted by Brim with a learned ratio; the headline is the engine's"
        )
        self.timeline.set_report(report)
        self.timeline_row.setText(report.timeline[-1].row() if report.timeline else "")

    def text(self) -> str:
        """What the rail says, as lines (for tests and for copying)."""
        marks = QTextDocumentFragment.fromHtml(self.marks_label.text()).toPlainText()
        lines = [self.headline_label.text(), self.source_label.text(), marks]
        lines.append(self.headroom_label.text())
        lines.extend(label.text() for label in self.cache_labels if not label.isHidden())
        lines.extend(f"{name}: {tokens:,}" for name, tokens in self.breakdown.rows())
        if not self.timeline_row.isHidden():
            lines.append(self.timeline_row.text())
        return "\n".join(line for line in lines if line)
