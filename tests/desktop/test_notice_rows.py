"""Notice rows: what the ladder did is shown every time it does it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from engine.context.notices import trim_notice
from engine.events import NoticeEvent
from tests.helpers.fake_session import FakeTurn


def _send(qtbot: Any, window: Any, text: str) -> None:
    qtbot.keyClicks(window.composer, text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_the_same_trim_twice_shows_two_rows_and_the_window_warning_shows_once(
    qtbot: Any, open_desktop: Any
):
    trimmed = trim_notice(4)
    unpinned = "Ollama chooses the window itself: pin num_ctx in the agent to make it exact."
    d = open_desktop(
        window_warnings=[unpinned],
        turns=[
            FakeTurn(notices=[NoticeEvent("warning", trimmed)]),
            FakeTurn(notices=[NoticeEvent("warning", trimmed)]),
        ],
    )
    _send(qtbot, d.window, "first")
    qtbot.waitUntil(lambda: d.fake.sent == ["first"] and not d.app.bridge.busy)
    _send(qtbot, d.window, "second")
    qtbot.waitUntil(lambda: d.fake.sent == ["first", "second"] and not d.app.bridge.busy)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready")
    notices = [row.text for row in d.window.transcript.rows() if row.kind == "notice"]
    assert notices.count(trimmed) == 2
    assert notices.count(unpinned) == 1
