"""Beside and under the composer: the Send button (Stop while a turn runs) and the hint line
that says what the keys do, or what the agent is doing while it cannot take a message."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

# Each hint in the forms it may take, longest first: the hint line shows the longest that
# fits its width on one line (the last one wraps where even it does not).
HINT = (
    "Enter sends  ·  Shift+Enter new line  ·  Esc stops  ·  / for commands",
    "Enter sends · Shift+Enter new line · Esc stops · / commands",
    # Where even this wraps, it wraps between the keys, not inside one (no-break spaces).
    "Enter\u00a0sends\u00a0· Esc\u00a0stops\u00a0· /\u00a0commands",
)
STATE_HINTS = {
    "compacting": (
        "compacting — older messages are being summarized to make room",
        "compacting older messages to make room",
        "compacting…",
    ),
    "waiting for approval": (
        "waiting for approval — answer the dialog to continue",
        "waiting for approval in the dialog",
        "waiting for approval",
    ),
    "loading model": (
        "loading model — your message will be sent once it is ready",
        "loading model — your message waits for it",
        "loading model…",
    ),
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


def fitting_form(forms: tuple[str, ...], fits: Callable[[str], bool]) -> str:
    """The longest of `forms` that `fits` on one line, else the shortest."""
    return next((form for form in forms if fits(form)), forms[-1])


class StateHint(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(HINT[0], parent)
        self.setObjectName("hint")
        self._forms = HINT
        # The hint shortens, then wraps, rather than setting the column's minimum width:
        # the window must fit a small screen beside the sidebar or the rail.
        self.setWordWrap(True)
        self.setToolTip(HINT[0])

    def show_state(self, state: str) -> None:
        self._forms = STATE_HINTS.get(state, HINT)
        self.setToolTip(self._forms[0])
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        room = self.contentsRect().width()
        metrics = self.fontMetrics()
        text = fitting_form(self._forms, lambda form: metrics.horizontalAdvance(form) <= room)
        if text != self.text():
            self.setText(text)
