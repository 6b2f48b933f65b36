"""A list or number box in a scrolled form takes the mouse wheel only once it has the focus.

Otherwise scrolling a long form over it changes the setting under the pointer (a model, a
spill policy) without the person noticing. An unfocused box passes the wheel on to the form,
which scrolls; a click or Tab gives it the focus, and then the wheel is its own again.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QWidget


class _WheelGuard(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Wheel
            and isinstance(watched, QWidget)
            and not watched.hasFocus()
        ):
            event.ignore()  # not for this box: Qt hands it to the parent, which scrolls
            return True
        return super().eventFilter(watched, event)


def wheel_only_when_focused(widget: QWidget) -> None:
    """Let `widget` take the wheel only while it has the focus (and not gain it by wheel)."""
    widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    widget.installEventFilter(_WheelGuard(widget))
