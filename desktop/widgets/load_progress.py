"""The bar under the banners while a model loads: its weights' share read, then a busy bar
that says the engine is preparing the model's context."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar, QWidget

LOAD_FORMAT = "Loading model… %p%"


class LoadProgress(QProgressBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("loadProgress")
        self.setRange(0, 0)
        self.setFormat(LOAD_FORMAT)
        self.setTextVisible(True)
        self.hide()

    def show_loading(self) -> None:
        """A model is loading; how far is not known yet."""
        self.setRange(0, 0)
        self.show()

    def show_fraction(self, fraction: float) -> None:
        """The weights' share read; once all are in, the engine still sets up its context,
        so the bar turns busy and says so rather than sitting at 100%."""
        if fraction >= 1.0:
            self.setFormat("Model loaded; preparing its context…")
            self.setRange(0, 0)
        else:
            self.setRange(0, 100)
            self.setFormat(LOAD_FORMAT)
            self.setValue(round(fraction * 100))
        self.show()
