"""`/learn` in the foreground: what it is doing, how long it has taken, and a way to stop it.

The pass itself runs on the engine thread (the session's `/learn`); this dialog only shows its
progress events and turns Cancel (or Escape) into a cancel intent. It stays open until the
engine says the pass is over, so the person never wonders whether it is still running.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop import theme

STYLE = theme.style_sheet("learn_progress")


class LearnProgressDialog(QDialog):
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("learnProgress")
        self.setWindowTitle("Learning from this conversation")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setStyleSheet(STYLE)
        self.setMinimumWidth(460)
        self.cancelling = False
        self._started = time.monotonic()
        self._over = False

        self.title = QLabel(
            "Looking for lasting facts you stated in this conversation…", objectName="learnTitle"
        )
        self.title.setWordWrap(True)
        self.stage = QLabel("Starting", objectName="learnStage")
        self.bar = QProgressBar(objectName="learnBar")
        self.bar.setRange(0, 0)
        self.bar.setTextVisible(False)
        self.elapsed = QLabel("", objectName="learnElapsed")
        self.cancel_button = QPushButton("Cancel", objectName="flat")
        self.cancel_button.setAutoDefault(False)
        self.cancel_button.setDefault(True)
        self.cancel_button.clicked.connect(self.reject)
        note = QLabel(
            "The suggestions it finds wait for your review; nothing is written to memory "
            "until you accept it.",
            objectName="learnStage",
        )
        note.setWordWrap(True)

        row = QHBoxLayout()
        row.addWidget(self.elapsed, 1)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 16, 18, 14)
        layout.addWidget(self.title)
        layout.addWidget(self.stage)
        layout.addWidget(self.bar)
        layout.addWidget(note)
        layout.addLayout(row)

        self._clock = QTimer(self)
        self._clock.setInterval(500)
        self._clock.timeout.connect(self._tick)
        self._clock.start()
        self._tick()

    def set_stage(self, text: str) -> None:
        if not self.cancelling:
            self.stage.setText(text)

    def set_progress(self, step: int, steps: int, text: str) -> None:
        """The engine's step (each part read, then the curation call)."""
        if steps > 0:
            self.bar.setRange(0, steps)
            self.bar.setValue(max(0, step - 1))  # a step is shown done once the next begins
            # The stage names the part ("Reading part 1 of 2"); the bar counts the steps,
            # curation included, in words of its own rather than a second "1 of 3".
            self.bar.setFormat(f"step {step} of {steps}")
            self.bar.setTextVisible(steps > 1)
        self.set_stage(text)

    @Slot()
    def _tick(self) -> None:
        seconds = int(time.monotonic() - self._started)
        self.elapsed.setText(f"{seconds // 60}:{seconds % 60:02d} elapsed")

    @Slot()
    def reject(self) -> None:
        """Cancel or Escape: ask the engine to stop; the dialog closes when it has."""
        if self._over:
            super().reject()
            return
        if not self.cancelling:
            self.cancelling = True
            self.stage.setText("Cancelling…")
            self.cancel_button.setEnabled(False)
            self.cancel_requested.emit()

    def finish(self) -> None:
        """The pass is over (done, failed or cancelled): close."""
        self._over = True
        self._clock.stop()
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.done(QDialog.DialogCode.Rejected if self.cancelling else QDialog.DialogCode.Accepted)
