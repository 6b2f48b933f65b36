"""The chat keeps its room: below a width the rail folds into a toggle and the sidebar
collapses to icons, and a window saved on a larger screen opens on the one it has."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject, QRect, Qt

from desktop.layout import CHAT_MIN, STRIP_WIDTH, on_screen

SIZES = [(698, 480), (900, 600), (1280, 800), (1920, 1080)]


def _chat_width(window: Any) -> int:
    return window.transcript.parentWidget().width()


def _shown(widget: Any) -> bool:
    return widget.isVisibleTo(widget.window())


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_at_each_size_the_chat_column_keeps_its_room(qtbot, open_desktop, width, height):
    d = open_desktop()
    d.window.resize(width, height)
    qtbot.waitUntil(lambda: d.window.width() == width)
    qtbot.wait(20)
    fitted = d.window.fitted
    assert _chat_width(d.window) >= CHAT_MIN or fitted.rail_folded
    assert _chat_width(d.window) >= CHAT_MIN
    # The panels give way only when they must.
    assert fitted.rail_folded == (width < 1280)
    assert fitted.sidebar_collapsed == (width < 800)
    assert _shown(d.window.sidebar) == (not fitted.sidebar_collapsed)
    assert _shown(fitted.icons) == fitted.sidebar_collapsed
    assert _shown(fitted.rail_strip) == fitted.rail_folded


def test_the_folded_rail_opens_from_its_toggle_and_the_icons_still_act(qtbot, open_desktop):
    d = open_desktop()
    d.window.resize(698, 480)
    qtbot.waitUntil(lambda: d.window.fitted.sidebar_collapsed)
    fitted = d.window.fitted
    rail = fitted.rail_panel
    assert not _shown(rail)
    qtbot.mouseClick(fitted.rail_toggle, Qt.MouseButton.LeftButton)
    assert _shown(rail)
    qtbot.mouseClick(fitted.rail_toggle, Qt.MouseButton.LeftButton)
    assert not _shown(rail)
    qtbot.mouseClick(fitted.show_sidebar, Qt.MouseButton.LeftButton)
    assert _shown(d.window.sidebar)
    # Wide again: the automatic layout, both panels shown, no strips.
    d.window.resize(1400, 800)
    qtbot.waitUntil(lambda: not d.window.fitted.rail_folded)
    assert _shown(rail) and _shown(d.window.sidebar) and not _shown(fitted.icons)


def test_opening_the_folded_rail_takes_the_room_from_the_sidebar_not_the_chat(qtbot, open_desktop):
    d = open_desktop()
    d.window.resize(900, 600)
    qtbot.waitUntil(lambda: d.window.fitted.rail_folded)
    assert _shown(d.window.sidebar)
    qtbot.mouseClick(d.window.fitted.rail_toggle, Qt.MouseButton.LeftButton)
    qtbot.wait(20)
    assert _shown(d.window.fitted.rail_panel) and not _shown(d.window.sidebar)
    assert _chat_width(d.window) >= CHAT_MIN


def test_a_window_saved_on_a_big_screen_is_fitted_onto_a_smaller_one():
    screen = QRect(0, 0, 1440, 900)
    saved = QRect(400, 100, 1920, 1080)  # saved at 1920x1080
    fitted = on_screen(saved, screen)
    assert screen.contains(fitted)
    assert (fitted.width(), fitted.height()) == (1440, 900)
    off = on_screen(QRect(1800, 950, 800, 600), screen)  # placed past the right and bottom edge
    assert screen.contains(off) and (off.width(), off.height()) == (800, 600)


def test_the_window_opens_on_its_screen_whatever_the_saved_place(qtbot, open_desktop):
    d = open_desktop()
    window = d.window
    area = window.screen().availableGeometry()
    window.hide()
    window.resize(area.width() + 600, area.height() + 400)
    window.move(area.right() + 300, area.bottom() + 300)
    window.show()
    qtbot.waitUntil(lambda: area.contains(window.frameGeometry()), timeout=2000)


def _open_the_folded_rail(qtbot: Any, window: Any, width: int, height: int) -> None:
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width and window.fitted.rail_folded)
    qtbot.mouseClick(window.fitted.rail_toggle, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _shown(window.fitted.rail_panel))
    qtbot.wait(20)


def test_at_800_by_600_the_opened_rail_leaves_the_chat_its_room(qtbot, open_desktop):
    d = open_desktop()
    _open_the_folded_rail(qtbot, d.window, 800, 600)
    rail = d.window.fitted.rail_panel
    assert _chat_width(d.window) >= CHAT_MIN
    # The rail is still there to read, beside the chat, not over it.
    assert rail.width() >= 200
    assert rail.geometry().left() >= d.window.transcript.parentWidget().geometry().right()


class _ShownWidths(QObject):
    """The width a widget is allowed (its fixed width) each time it is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.widths: list[int] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show:
            self.widths.append(watched.maximumWidth())
        return False


def test_the_opened_rail_is_narrowed_before_it_shows_so_the_window_does_not_grow(
    qtbot, open_desktop
):
    # Shown at its full width first, the rail would ask a real X window for more than
    # 800 px, and the window would grow to hold it.
    d = open_desktop()
    d.window.resize(800, 600)
    qtbot.waitUntil(lambda: d.window.width() == 800 and d.window.fitted.rail_folded)
    shown = _ShownWidths()
    d.window.fitted.rail_panel.installEventFilter(shown)
    qtbot.mouseClick(d.window.fitted.rail_toggle, Qt.MouseButton.LeftButton)
    assert shown.widths and shown.widths[0] <= 800 - 2 * STRIP_WIDTH - CHAT_MIN


def _hint_lines(hint: Any) -> int:
    metrics = hint.fontMetrics()
    room = QRect(0, 0, hint.contentsRect().width(), 10_000)
    drawn = metrics.boundingRect(room, Qt.TextFlag.TextWordWrap, hint.text())
    assert drawn.width() <= hint.contentsRect().width()  # nothing cut at the right
    return round(drawn.height() / metrics.lineSpacing())


def _memory_waiting(window: Any) -> None:
    window.show_memory("Review the suggestions")
    window.show_waiting(3)


def test_the_key_hint_keeps_to_one_line_at_1280_beside_a_memory_notice(qtbot, open_desktop):
    d = open_desktop()
    _memory_waiting(d.window)
    d.window.resize(1280, 800)
    qtbot.waitUntil(lambda: d.window.width() == 1280)
    qtbot.wait(20)
    assert d.window.memory_badge.isVisibleTo(d.window)
    assert _hint_lines(d.window.hint) == 1
    assert "Esc stops" in d.window.hint.text() and "/ " in d.window.hint.text()


@pytest.mark.parametrize("rail_open", [False, True])
def test_the_key_hint_takes_at_most_two_lines_at_800(qtbot, open_desktop, rail_open):
    d = open_desktop()
    _memory_waiting(d.window)
    if rail_open:
        _open_the_folded_rail(qtbot, d.window, 800, 600)
    else:
        d.window.resize(800, 600)
        qtbot.waitUntil(lambda: d.window.width() == 800)
        qtbot.wait(20)
    assert d.window.width() == 800  # the window did not grow to hold the row
    assert _hint_lines(d.window.hint) <= 2
    for key in ("Enter", "Esc", "/"):
        assert key in d.window.hint.text()


@pytest.mark.parametrize("width", [698, 800])
def test_the_narrowed_rail_shows_its_content_whole(qtbot, open_desktop, width):
    d = open_desktop()
    d.window.show_memory("Review the suggestions")
    _open_the_folded_rail(qtbot, d.window, width, 480)
    body = d.window.rail
    viewport = body.parentWidget()
    # Content wider than the rail's viewport is cut at its right edge (no sideways scroll).
    assert body.minimumSizeHint().width() <= viewport.width()
    queue = d.window.review_queue
    assert queue.minimumSizeHint().width() <= queue.width()
