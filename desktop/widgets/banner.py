"""Banners above the conversation: faults with a Retry, and start-up problems to fix.

The user reads what went wrong in words, never a traceback. A fault that the engine marks
retryable (the engine was unreachable, the embedded engine crashed) carries a Retry button;
the conversation underneath is never cleared by a fault.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from desktop import theme

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
    "no_agent": "No usable agent",
}

LEVEL_COLOURS = {
    "error": (theme.ERROR_BG, theme.ERROR_BORDER, theme.ERROR_TEXT),
    "warning": (theme.WARNING_BG, "#f0d79a", theme.WARNING_TEXT),
    "info": (theme.INFO_BANNER_BG, theme.USER_BORDER, theme.INFO_TEXT),
}


class Banner(QFrame):
    """One dismissible banner; `retry_requested` when its Retry button is pressed."""

    retry_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.label = QLabel("", objectName="bannerText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Retry", objectName="retryButton")
        self.retry_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.retry_button.clicked.connect(self.retry_requested)
        self.retry_button.hide()
        self.close_button = QToolButton(objectName="bannerClose")
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.hide)
        self._plain = ""
        self.kind = ""
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_error(self, kind: str, message: str, *, retry: bool = False) -> None:
        """A fault in words; `retry`: the Retry button too (what the engine's `retryable`
        says for an error event — the banner does not second-guess it)."""
        title = KIND_TITLES.get(kind, kind.replace("_", " ").capitalize() or "Error")
        self.show_message("error", title, message, retry=retry)
        self.kind = kind

    def show_message(self, level: str, title: str, message: str, *, retry: bool = False) -> None:
        background, border, colour = LEVEL_COLOURS.get(level, LEVEL_COLOURS["error"])
        self.setStyleSheet(
            f"QFrame#banner {{ background: {background}; border: 1px solid {border}; "
            f"border-radius: 6px; }} QLabel#bannerText, QToolButton#bannerClose "
            f"{{ color: {colour}; border: none; }}"
        )
        self.kind = level
        self._plain = f"{title} — {message}" if title else message
        body = html.escape(message).replace("\n", "<br>")
        self.label.setText(f"<b>{html.escape(title)}</b> — {body}" if title else body)
        self.retry_button.setVisible(retry)
        self.show()

    def text(self) -> str:
        """The banner as the user reads it (without markup)."""
        return self._plain


# The name the first window used; a fault banner is a Banner.
ErrorBanner = Banner
