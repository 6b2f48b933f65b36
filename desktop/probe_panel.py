"""The agent editor's "What the engine says" panel: the engine's answer for the agent as saved
and as edited, side by side, with every warning and the legend of where a window comes from.

Kept apart from the dialog because it only draws an answer (engine/agent/probe.py decides the
figures and the warnings); asking the engine, and when, stays with the dialog.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.api import (
    ProbeComparison,
    ProbeFailure,
)

FAILURE_HEADLINES: dict[str, str] = {
    "unreachable": "The engine did not answer.",
    "timeout": "The engine did not answer in time.",
    "model_not_found": "The engine does not have this model.",
}
SOURCE_LEGEND = (
    "Window source: <b>server</b> what the engine serves now · <b>pinned</b> your num_ctx · "
    "<b>ceiling</b> your max_context_tokens · <b>model-max</b> the model's training length · "
    "<b>catalog</b> a published figure for the model's name · <b>assumed</b> Ollama's usual "
    "default until the model is loaded · <b>observed</b> what a rejection or a cut showed · "
    "<b>fallback</b> a guess, nothing reported. Nothing is saved by probing."
)


def format_cell(value: int | str | None, unset: str) -> str:
    """A figure with thousands separators; a blank setting as what a blank means."""
    if value is None:
        return unset
    if isinstance(value, int):
        return f"{value:,}"
    return value


class ProbePanel(QGroupBox):
    """The Probe button, its status line and the engine's last answer."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("What the engine says", parent)
        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        self.button = QPushButton("&Probe")
        self.button.setAutoDefault(False)
        self.button.setToolTip(
            "Ask the engine what it serves for these settings (nothing is saved)"
        )
        self.busy = QProgressBar(objectName="loadProgress")
        self.busy.setRange(0, 0)
        self.busy.setTextVisible(False)
        self.busy.setFixedHeight(8)
        self.busy.hide()
        self.status = QLabel(
            "Probe asks the engine what window it serves with these settings, before saving.",
            objectName="probeStatus",
        )
        self.status.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.button)
        top.addWidget(self.status, 1)
        self.table = QTableWidget(0, 3, objectName="probeTable")
        self.table.setHorizontalHeaderLabels(["", "Saved", "These settings"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.hide()
        self.failure = QLabel("", objectName="probeFailure")
        self.failure.setWordWrap(True)
        self.failure.hide()
        self.warnings_box = QVBoxLayout()
        self.warnings_box.setSpacing(6)
        self.notes = QLabel("", objectName="probeNote")
        self.notes.setWordWrap(True)
        self.notes.hide()
        layout.addLayout(top)
        layout.addWidget(self.busy)
        layout.addWidget(self.failure)
        layout.addWidget(self.table)
        layout.addLayout(self.warnings_box)
        layout.addWidget(self.notes)
        layout.addStretch(1)
        legend = QLabel(SOURCE_LEGEND, objectName="probeNote")
        legend.setWordWrap(True)
        layout.addWidget(legend)

    def asking(self, provider: str, where: str) -> None:
        """A probe went out: say to whom, show the busy bar, hold the button."""
        self.status.setText(f"Asking {provider} at {where}…")
        self.busy.show()
        self.button.setEnabled(False)

    def probing(self) -> bool:
        """A probe is in flight (its busy bar shows)."""
        return not self.busy.isHidden()

    def mark_stale(self) -> None:
        """The settings changed after a probe whose table still shows."""
        if not self.table.isHidden():
            self.status.setText("Settings changed since the probe: probe again.")

    def show_comparison(self, result: ProbeComparison | ProbeFailure) -> None:
        self.busy.hide()
        self.button.setEnabled(True)
        self._clear_warnings()
        if isinstance(result, ProbeFailure):
            self.table.hide()
            self.notes.hide()
            self.failure.setText(
                f"<b>{FAILURE_HEADLINES.get(result.kind, 'The probe failed.')}</b><br>"
                f"{html.escape(result.message)}"
            )
            self.failure.show()
            self.status.setText("Check that the engine runs at that address, then probe again.")
            return
        self.failure.hide()
        self._fill_table(result)
        for warning in result.warnings:
            label = QLabel(f"⚠ {warning}", objectName="probeWarning")
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.warnings_box.addWidget(label)
        self.notes.setText(" ".join(result.notes))
        self.notes.setVisible(bool(result.notes))
        count = len(result.warnings)
        self.status.setText(
            f"{result.provider}: effective window {result.window:,} ({result.source})"
            + (f" · {count} warning{'s' if count != 1 else ''}" if count else " · no warnings")
        )

    def _fill_table(self, result: ProbeComparison) -> None:
        """Saved beside edited; the window, its source and what the edit changes in bold."""
        rows = result.rows()
        has_saved = result.saved is not None
        self.table.setColumnHidden(1, not has_saved)
        self.table.setRowCount(len(rows))
        bold = QFont(self.window().font())
        bold.setWeight(QFont.Weight.DemiBold)
        for index, row in enumerate(rows):
            label = QTableWidgetItem(row.label)
            saved = QTableWidgetItem(format_cell(row.saved, row.unset) if has_saved else "")
            edited = QTableWidgetItem(format_cell(row.edited, row.unset))
            for item in (saved, edited):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if row.key in ("window", "source") or (has_saved and row.saved != row.edited):
                edited.setFont(bold)
            self.table.setItem(index, 0, label)
            self.table.setItem(index, 1, saved)
            self.table.setItem(index, 2, edited)
        self.table.resizeRowsToContents()
        height = self.table.horizontalHeader().height() + 4
        height += sum(self.table.rowHeight(i) for i in range(len(rows)))
        self.table.setFixedHeight(height)
        self.table.show()

    def warning_texts(self) -> list[str]:
        """The warnings the panel shows now."""
        texts = []
        for i in range(self.warnings_box.count()):
            widget = self.warnings_box.itemAt(i).widget()
            if isinstance(widget, QLabel):
                texts.append(widget.text().removeprefix("⚠ "))
        return texts

    def _clear_warnings(self) -> None:
        while self.warnings_box.count():
            widget = self.warnings_box.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
