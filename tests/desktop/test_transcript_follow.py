"""The transcript stays with its reader: it follows the end while the reader is at the end,
stays where the reader scrolled otherwise (offering "Jump to latest" when text arrives below),
and a finished answer keeps the layout it streamed with."""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QAbstractSlider

from desktop.widgets.follow import top_position
from desktop.widgets.transcript import TranscriptView
from tests.helpers.fake_provider import InProcessEngine

POEM = "Roses are red,\nViolets are blue,\nSugar is sweet,\nAnd so are you."


def _view(qtbot: Any, width: int = 700, height: int = 400) -> TranscriptView:
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    for i in range(30):
        view.add_notice(f"notice {i}: " + "something the engine said " * 6)
    qtbot.wait(30)
    return view


def _at_end(view: TranscriptView) -> bool:
    bar = view.verticalScrollBar()
    return bar.maximum() > 0 and bar.value() >= bar.maximum() - 4


def _stream(qtbot: Any, view: TranscriptView, chunks: int = 8) -> None:
    for _ in range(chunks):
        view.append_stream("more of the answer, token after token, " * 4)
        qtbot.wait(5)


def test_the_view_follows_the_streaming_answer_while_the_reader_is_at_the_end(qtbot):
    view = _view(qtbot)
    assert _at_end(view)
    _stream(qtbot, view)
    qtbot.wait(30)
    assert _at_end(view)
    assert not view.follower.jump.isVisible()


def test_a_reader_who_scrolled_up_stays_on_their_line_and_is_offered_the_latest(qtbot):
    view = _view(qtbot)
    bar = view.verticalScrollBar()
    bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepSub)
    bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepSub)
    kept = bar.value()
    assert kept < bar.maximum()
    _stream(qtbot, view)
    view.add_receipt("12 tokens")
    qtbot.wait(30)
    assert bar.value() == kept
    assert view.follower.jump.isVisible()
    qtbot.mouseClick(view.follower.jump, Qt.MouseButton.LeftButton)
    assert _at_end(view) and not view.follower.jump.isVisible()
    _stream(qtbot, view, 2)
    assert _at_end(view)  # following again


def test_a_long_sent_message_does_not_pin_the_view_to_its_top(qtbot, open_desktop):
    d = open_desktop(engine=InProcessEngine(window=131072))  # a window the paste fits in
    d.engine.script(deltas=["The answer. " * 20] * 30, delay_s=0.01)
    d.window.resize(1000, 700)
    paste = "\n".join(f"line {i}: " + "pasted text " * 6 for i in range(430))  # ~31 KB
    assert len(paste) > 30_000
    d.window.composer.setPlainText(paste)
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10_000)
    qtbot.wait(100)
    assert "The answer." in d.window.transcript.toPlainText()
    assert _at_end(d.window.transcript)


def test_a_resize_keeps_a_following_view_at_the_end(qtbot):
    view = _view(qtbot, 1000, 500)
    _stream(qtbot, view)
    view.resize(600, 500)  # narrower: the text grows taller
    qtbot.wait(50)
    assert _at_end(view)
    view.resize(1200, 400)
    qtbot.wait(50)
    assert _at_end(view)


def test_a_resize_keeps_a_reader_who_scrolled_up_on_the_same_text(qtbot):
    view = _view(qtbot, 1000, 500)
    bar = view.verticalScrollBar()
    bar.setSliderPosition(bar.maximum() // 2)
    bar.triggerAction(QAbstractSlider.SliderAction.SliderMove)
    before = top_position(view)
    view.resize(600, 500)
    qtbot.wait(50)
    assert bar.value() > 0 and not _at_end(view)
    # The line at the top is the one that was there (a line wraps differently, so allow it).
    after = view.cursorForPosition(QPoint(0, 0)).position()
    assert abs(after - before) < 200


def test_a_finished_poem_keeps_its_four_lines_and_no_bold(qtbot):
    view = _view(qtbot)
    view.append_stream(POEM + "\n---\nThat is all.")
    view.finish_stream()
    text = view.toPlainText()
    lines = [line.strip() for line in re.split("[\n\u2028]", text)]
    for verse in POEM.split("\n"):
        assert verse in lines  # a line of its own, not run into one paragraph
    document = view.document()
    start = document.find("Roses").selectionStart()
    cursor = document.find("That is all.")
    block = document.findBlock(start)
    while block.isValid() and block.position() <= cursor.selectionEnd():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            assert fragment.charFormat().fontWeight() <= QFont.Weight.Normal, fragment.text()
            fragments += 1
        block = block.next()
