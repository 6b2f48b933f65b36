"""Beside and under the composer: the Send button (Stop while a turn runs) and the hint line
that says what the keys do, or what the agent is doing while it cannot take a message."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

HINT = "Enter sends  ·  Shift+Enter new line  ·  Esc stops  ·  / for commands"
STATE_HINTS = {
    "compacting": "compacting — older messages are being summarized to make room",
    "waiting for approval": "waiting for approval — answer the dialog to continue",
    "loading model": "loading model — your message will be sent once it is ready",
}


class SendButton(QPushButton):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Send", parent)
        self.setObjectName("sendButton")
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def set_busy(self, busy: bool) -> None:
        """A turn runs: the button stops it (styled as Stop); else it sends."""
        self.setText("Stop" if busy else "Send")
        self.setToolTip("Cancel the running turn (Esc)" if busy else "Send (Enter)")
        self.setProperty("stop", busy)
        self.style().unpolish(self)
        self.style().polish(self)


class StateHint(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(HINT, parent)
        self.setObjectName("hint")
        # The hint wraps rather than setting the column's minimum width: the window must fit
        # a small screen (900 px wide) beside the sidebar and the rail.
        self.setWordWrap(True)

    def show_state(self, state: str) -> None:
        self.setText(STATE_HINTS.get(state, HINT))
