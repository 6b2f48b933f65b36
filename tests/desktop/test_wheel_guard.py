"""Scrolling the agent editor's form never changes a setting the pointer passes over."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox

from desktop.agent_form import AgentForm


def _wheel_down(widget: Any) -> bool:
    """One notch of the wheel over `widget`; whether the widget kept it (a wheel it does not
    accept, Qt hands on to the form around it, which scrolls)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, -120),  # one notch towards the user: the next item in a list
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def test_the_wheel_over_an_unfocused_list_goes_to_the_form_and_leaves_the_setting(qtbot: Any):
    form = AgentForm()
    qtbot.addWidget(form)
    form.resize(600, 300)  # shorter than the form: it scrolls
    form.show()
    qtbot.waitExposed(form)
    combo = form.fields["on_spill"].widget
    assert isinstance(combo, QComboBox)
    form.ensureWidgetVisible(combo)
    before = combo.currentIndex()
    assert not _wheel_down(combo)  # handed on to the form
    assert combo.currentIndex() == before
    assert not combo.hasFocus()
    # Once the person gives it the focus, the wheel is the list's own again.
    combo.setFocus()
    qtbot.waitUntil(combo.hasFocus)
    assert _wheel_down(combo)
    assert combo.currentIndex() == before + 1
