"""Notice rows: a warning is shown every time it is said, the window's own warning once."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from engine.context.nudges import iteration_pressure_text
from tests.helpers.fake_provider import InProcessEngine


def _send(qtbot: Any, window: Any, text: str) -> None:
    qtbot.keyClicks(window.composer, text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_the_same_warning_twice_shows_two_rows_and_the_window_warning_shows_once(
    qtbot: Any, open_desktop: Any
):
    # Each turn of an agent capped at 2 steps uses half of them at its first request: the
    # iteration ramp warns at every turn, in the same words.
    ramp = iteration_pressure_text(0.5, 1, 2)
    unpinned = "Ollama chooses the window itself: pin num_ctx in the agent to make it exact."
    d = open_desktop(engine=InProcessEngine(window=8192, warnings=[unpinned]), max_iterations=2)
    _send(qtbot, d.window, "first")
    qtbot.waitUntil(lambda: d.sent == ["first"] and not d.app.bridge.busy)
    _send(qtbot, d.window, "second")
    qtbot.waitUntil(lambda: d.sent == ["first", "second"] and not d.app.bridge.busy)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready")
    notices = [row for row in d.window.transcript.rows() if row.kind == "notice"]
    assert [row.level for row in notices if row.text == ramp] == ["warning", "warning"]
    assert [row.text for row in notices].count(unpinned) == 1
