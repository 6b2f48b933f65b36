"""Faults found by using the app as a demanding user would, each pinned by a test.

Each test drives the window the way the user did when the fault showed (keys, commands,
the agent editor) and asserts what the user would have noticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from tests.desktop.test_agent_editor import open_editor, save_and_wait_for_the_new_session
from tests.desktop.test_agent_editor import type_into as type_into_field
from tests.helpers.fake_engines import FakeLlamaServer, Reply

LONG_MODEL = "qwen2.5-coder-7b-instruct-q4_k_m"


def _agent(url: str) -> dict[str, str]:
    text = f'name = "coder"\nprovider = "llamacpp"\nbase_url = "{url}"\nmodel = "{LONG_MODEL}"\n'
    return {"coder.toml": text}


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


@pytest.fixture
def llama() -> Iterator[FakeLlamaServer]:
    with FakeLlamaServer(n_ctx=8192, slots=1, model=LONG_MODEL) as fake:
        yield fake


def test_esc_behind_an_open_overlay_closes_it_and_the_turn_keeps_running(qtbot, open_desktop):
    # `/work` answers so fast that its overlay can open while the command popup still holds
    # the window's activation; the keyboard focus then stays in the composer, and Esc there
    # used to cancel the turn the overlay promises to leave alone.
    d = open_desktop()
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "A long job")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    _send(qtbot, d.window, "/work")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible())
    d.window.composer.setFocus()  # where the focus stays when the overlay opens inactive
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    assert not d.window.overlay.isVisible()
    assert d.session.cancels == 0
    assert d.app.bridge.busy
    assert d.window.header.state() == "streaming"
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)  # with no overlay, Esc stops
    qtbot.waitUntil(lambda: d.session.cancels == 1)
    qtbot.waitUntil(lambda: d.engine.cancelled == 1)


def test_usage_shows_every_column_without_scrolling_sideways(qtbot, real_desktop, llama):
    llama.responder = lambda _request: Reply(text="Short answer.")
    d = real_desktop(agents=_agent(llama.url))
    d.window.resize(1280, 800)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10000)
    _send(qtbot, d.window, "hello")
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    _send(qtbot, d.window, "/usage")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible() and d.window.overlay.kind == "usage")
    assert f"llamacpp/{LONG_MODEL}" in d.window.overlay.text()
    sideways = d.window.overlay.scroll.horizontalScrollBar()
    assert sideways.maximum() == 0, "the price column is hidden behind a scroll bar"


def test_the_still_working_banner_goes_when_the_turn_ends(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "A long job")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    d.window.new_conversation()  # refused while the turn runs, with a banner saying why
    assert d.window.banner.isVisible()
    assert "still running" in d.window.banner.text()
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert not d.window.banner.isVisible()


def test_saving_the_agent_keeps_each_receipt_under_its_own_answer(qtbot, real_desktop, llama):
    answers = iter(["Red, green, blue.", "Cat, dog, owl."])
    llama.responder = lambda _request: Reply(text=next(answers))
    d = real_desktop(agents=_agent(llama.url))
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10000)
    for text in ("Name three colours.", "Name three animals."):
        _send(qtbot, d.window, text)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    kinds = [row.kind for row in d.window.transcript.rows()]
    assert kinds == ["user", "assistant", "receipt"] * 2

    dialog = open_editor(qtbot, d)
    type_into_field(qtbot, dialog, "num_ctx", "4096")
    save_and_wait_for_the_new_session(qtbot, d, dialog)

    rows = d.window.transcript.rows()
    assert [row.kind for row in rows] == ["user", "assistant", "receipt"] * 2
    assert rows[1].text == "Red, green, blue."
    assert rows[4].text == "Cat, dog, owl."


def test_a_new_conversation_does_not_show_the_last_answers_speed(qtbot, real_desktop, llama):
    llama.responder = lambda _request: Reply(text="Short answer.")
    d = real_desktop(agents=_agent(llama.url))
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10000)
    _send(qtbot, d.window, "hello")
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    assert d.window.header.rate_label.text().endswith("/s")
    before = d.app.navigator.conversation_id
    d.window.new_conversation()
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id != before, timeout=10000)
    assert d.window.header.rate_label.text() == ""


def test_the_window_fits_a_900_by_600_screen_with_the_composer_readable(qtbot, real_desktop, llama):
    d = real_desktop(agents=_agent(llama.url))
    assert d.window.sidebar.isVisible()
    d.window.resize(900, 600)
    qtbot.waitUntil(lambda: d.window.width() == 900 and d.window.height() == 600)
    composer = d.window.composer
    # The rail folds at this width: the conversation column keeps its room.
    assert d.window.transcript.width() > 440
    metrics = QFontMetrics(composer.font())
    rect = metrics.boundingRect(
        0,
        0,
        composer.viewport().width() - int(composer.document().documentMargin() * 2),
        10_000,
        int(Qt.TextFlag.TextWordWrap),
        composer.placeholderText(),
    )
    # Every line of the placeholder shows once the layout has settled.
    qtbot.waitUntil(lambda: composer.viewport().height() >= rect.height(), timeout=2000)
