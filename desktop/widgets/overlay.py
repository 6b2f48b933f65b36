"""Snapshot overlays over the live transcript: `/context`, `/usage`, `/work` and what a
compaction replaced (`/compaction show N`, a compaction row's Show / Restore).

The overlay covers the window's content with a dimmed backdrop and a centred panel; the turn
keeps running behind it. Esc, q or Ctrl+C closes it, and closing never cancels the turn: the
keys are taken here and never reach the composer.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.widgets.compaction_view import CompactionView
from desktop.widgets.context_rail import ContextRail
from desktop.widgets.request_view import RequestView
from engine.api import (
    CompactionViewEvent,
    ContextReport,
    RequestViewEvent,
    UsageReport,
)

CLOSE_HINT = "Esc, q or Ctrl+C closes this; the turn keeps running"
NO_WORK_STATE = "No work state yet: the agent records one with update_work_state."
NO_WORK_STATE_NO_TOOLS = (
    "No work state: the agent has no tools in this conversation (no folder, or a model "
    "without tool calls), so it cannot record one. Choose a folder to give it tools."
)
PANEL_WIDTH = 620  # the panel's usual width; wider content widens it


def _closes(event: QKeyEvent) -> bool:
    key = event.key()
    if key in (Qt.Key.Key_Escape, Qt.Key.Key_Q):
        return True
    return key == Qt.Key.Key_C and bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)


class Overlay(QWidget):
    closed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("overlay")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.panel = QFrame(self, objectName="overlayPanel")
        self.title = QLabel("", objectName="overlayTitle")
        self.hint = QLabel(CLOSE_HINT, objectName="railMuted")
        self.scroll = QScrollArea(objectName="overlayScroll")
        self.scroll.viewport().setObjectName("overlayViewport")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        layout = QVBoxLayout(self.panel)
        layout.setContentsMargins(18, 14, 18, 12)
        layout.addWidget(self.title)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.hint)
        self.kind = ""
        self.context_view: ContextView | None = None
        parent.installEventFilter(self)
        self.hide()

    # -- showing ---------------------------------------------------------------------------

    def show_context(self, report: ContextReport) -> None:
        taken = time.strftime("%H:%M:%S", time.localtime(report.taken_at or time.time()))
        view = ContextView(report)
        self.context_view = view
        self._open("context", f"/context — snapshot at {taken}", view)

    def show_usage(self, report: UsageReport) -> None:
        self._open("usage", "/usage — this conversation", UsageView(report))

    def show_work(self, text: str, *, tools: bool = True) -> None:
        """The work state; without one, how one comes about (only an agent with tools can
        record it)."""
        view = QPlainTextEdit()
        view.setReadOnly(True)
        view.setPlainText(text or (NO_WORK_STATE if tools else NO_WORK_STATE_NO_TOOLS))
        self._open("work", "/work — the agent's work state", view)

    def show_compaction(
        self, event: CompactionViewEvent, assistant: str = "Assistant"
    ) -> CompactionView:
        view = CompactionView(event, assistant)
        self._open("compaction", f"Compaction {event.number} — what it replaced", view)
        return view

    def show_request(self, event: RequestViewEvent) -> RequestView:
        view = RequestView(event)
        self._open("request", "What the model saw — its last request", view)
        return view

    def compaction_view(self) -> CompactionView | None:
        """The compaction view open now, if any."""
        widget = self.scroll.widget()
        return widget if self.kind == "compaction" and isinstance(widget, CompactionView) else None

    def close_overlay(self) -> None:
        if self.isVisible():
            self.hide()
            self.kind = ""
            self.closed.emit()

    def _open(self, kind: str, title: str, content: QWidget) -> None:
        self.kind = kind
        self.title.setText(title)
        old = self.scroll.takeWidget()
        if old is not None:
            old.deleteLater()
        self.scroll.setWidget(content)
        self.show()
        self._fit()
        self.raise_()
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def text(self) -> str:
        """What the panel says, for tests."""
        widget = self.scroll.widget()
        body = widget.text() if hasattr(widget, "text") else ""
        if isinstance(widget, QPlainTextEdit):
            body = widget.toPlainText()
        return f"{self.title.text()}\n{body}"

    # -- behaviour -------------------------------------------------------------------------

    def _fit(self) -> None:
        parent = self.parentWidget()
        if parent is None:
            return
        self.setGeometry(parent.rect())
        content = self.scroll.widget()
        if content is not None:
            content.ensurePolished()
            content.adjustSize()
        # As wide as the content needs (a /usage table with a long model name), at least
        # PANEL_WIDTH, never wider than the window leaves: columns are not hidden behind a
        # scroll bar while there is room to show them.
        margins = self.panel.layout().contentsMargins()
        needed = (content.sizeHint().width() if content is not None else 0) + margins.left()
        needed += margins.right() + self.scroll.verticalScrollBar().sizeHint().width()
        width = max(360, min(self.width() - 80, max(PANEL_WIDTH, needed)))
        wanted = 110 + (content.sizeHint().height() if content is not None else 400)
        height = min(self.height() - 60, max(240, wanted))
        self.panel.setGeometry(
            (self.width() - width) // 2, max(20, (self.height() - height) // 2), width, height
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize:
            self._fit()
        return False

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and _closes(event)
        ):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if _closes(event):
            self.close_overlay()
            event.accept()
            return
        event.accept()  # nothing typed here reaches the composer behind

    def mousePressEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        if not self.panel.geometry().contains(event.position().toPoint()):
            self.close_overlay()
        event.accept()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(20, 26, 36, 110))
        painter.end()


class ContextView(QWidget):
    """The rail at one moment, plus the project instruction files it loaded and the
    sampling in force."""

    def __init__(self, report: ContextReport, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("overlayContent")
        self.rail = ContextRail(timeline=True, stretch=False)
        self.rail.setObjectName("overlayRail")
        self.rail.set_report(report)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.rail)
        # How the figures were counted (the engine's tokenizer, or an estimate), as headless says.
        self.counting = QLabel(f"Counting: {report.counting}", objectName="railMuted")
        self.counting.setWordWrap(True)
        self.counting.setContentsMargins(14, 0, 14, 0)
        self.counting.setVisible(bool(report.counting))
        layout.addWidget(self.counting)
        # Whether the engine moves cached chunks (its probe's finding), as headless says.
        self.reuse = QLabel(report.reuse_line(), objectName="railMuted")
        self.reuse.setContentsMargins(14, 0, 14, 0)
        self.reuse.setVisible(bool(report.window))
        layout.addWidget(self.reuse)
        files = ", ".join(report.instructions) if report.instructions else "none found"
        self.instructions = QLabel(f"Project instructions: {files}", objectName="railMuted")
        self.instructions.setWordWrap(True)
        self.instructions.setContentsMargins(14, 0, 14, 0)
        layout.addWidget(self.instructions)
        # The sampling every answer is sent with (engine/report/context_report.py words it).
        self.sampling = QLabel(report.sampling_line(), objectName="railMuted")
        self.sampling.setWordWrap(True)
        self.sampling.setContentsMargins(14, 0, 14, 0)
        self.sampling.setVisible(report.sampling is not None)
        layout.addWidget(self.sampling)
        layout.addStretch(1)

    def text(self) -> str:
        counting = self.counting.text() if not self.counting.isHidden() else ""
        reuse = self.reuse.text() if not self.reuse.isHidden() else ""
        shown = [self.rail.text(), counting, reuse, self.instructions.text(), self.sampling.text()]
        return "\n".join(line for line in shown if line)


class UsageView(QWidget):
    """One row per provider and model, then the total; prices are never invented."""

    def __init__(self, report: UsageReport, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.report = report
        grid = QGridLayout(self)
        grid.setHorizontalSpacing(18)
        headers = ("model", "requests", "prompt in (cached)", "out", "price")
        for column, name in enumerate(headers):
            grid.addWidget(QLabel(name.upper(), objectName="sectionTitle"), 0, column)
        rows = [*report.rows, report.total, *report.shown_purposes]
        total_row = len(report.rows) + 1  # the rows after the total are its kinds of request
        for index, row in enumerate(rows, start=1):
            cached = "not reported" if row.cached_tokens is None else f"{row.cached_tokens:,}"
            name = "total" if index == total_row else f"  {row.model}"
            values = (
                row.label if row.provider else name,
                f"{row.requests:,}",
                f"{row.prompt_tokens:,} ({cached})",
                f"{row.completion_tokens:,}",
                row.price,
            )
            for column, value in enumerate(values):
                label = QLabel(value, objectName="railValue" if column else "railHeadline")
                grid.addWidget(label, index, column)
        note = QLabel(report.note, objectName="railMuted")
        note.setWordWrap(True)
        grid.addWidget(note, len(rows) + 1, 0, 1, len(headers))
        grid.setRowStretch(len(rows) + 2, 1)

    def text(self) -> str:
        return "\n".join(self.report.lines())
