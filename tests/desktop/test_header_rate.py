"""The header's tokens/s belongs to the answer it measured: while the next one streams, the
last answer's speed is not shown as if it were this one's."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_the_last_answers_rate_is_cleared_while_the_next_answer_streams(qtbot, open_desktop):
    d = open_desktop()
    _send(qtbot, d.window, "first")
    qtbot.waitUntil(lambda: not d.app.bridge.busy and bool(d.window.header.rate_label.text()))
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "second")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    assert d.window.header.rate_label.text() == ""
    d.window.cancel_turn()
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
