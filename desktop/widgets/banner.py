"""A dismissible banner for faults: the user reads what went wrong, never a traceback."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

# Readable names for the engine's error kinds; an unknown kind is shown as it comes.
KIND_TITLES: dict[str, str] = {
    "unreachable": "Engine unreachable",
    "model_not_found": "Model not found",
    "context_overflow": "Context overflow",
    "server_error": "Engine error",
    "protocol_error": "Unexpected engine reply",
    "startup": "Could not start the session",
    "no_session": "No session",
    "config": "Configuration problem",
    "busy": "Still working",
    "internal": "Something went wrong inside Brim",
}


class ErrorBanner(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.label = QLabel("", objectName="bannerText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.close_button = QToolButton(objectName="bannerClose")
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.hide)
        self._plain = ""
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_error(self, kind: str, message: str) -> None:
        title = KIND_TITLES.get(kind, kind.replace("_", " ").capitalize() or "Error")
        self._plain = f"{title} — {message}"
        self.label.setText(f"<b>{_escape(title)}</b> — {_escape(message)}")
        self.show()

    def text(self) -> str:
        """The banner as the user reads it (without markup)."""
        return self._plain


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
