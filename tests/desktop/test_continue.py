"""An answer cut at its output cap offers Continue in the window, which asks for the rest
(the same 'continue' a headless user types), on the real session and a llama-server double."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer, Reply

ESSAY = " ".join(f"river{i}" for i in range(5_000))
REST = "And that is where the river meets the sea."


@pytest.fixture
def llama() -> Iterator[FakeLlamaServer]:
    with FakeLlamaServer(n_ctx=8192, slots=1) as fake:
        yield fake


def _answer(request: Any) -> Reply:
    last = request.body["messages"][-1]
    return Reply(text=REST) if last.get("content") == "continue" else Reply(text=ESSAY)


def _click_text(qtbot: Any, view: Any, text: str) -> None:
    cursor = view.document().find(text)
    assert not cursor.isNull(), f"{text!r} is not shown"
    probe = view.textCursor()
    probe.setPosition(cursor.selectionStart() + 2)
    view.setTextCursor(probe)
    view.ensureCursorVisible()
    point = view.cursorRect(probe).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def test_continue_on_a_cut_answer_asks_for_the_rest_and_shows_it(qtbot, real_desktop, llama):
    llama.responder = _answer
    d = real_desktop(agents={"a.toml": agent_toml("writer", llama.url, max_tokens=40)})
    d.window.resize(1280, 800)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
    chat_and_wait(qtbot, d, "Write a very long essay about rivers.")
    view = d.window.transcript
    qtbot.waitUntil(lambda: "Cut at 40 tokens" in view.toPlainText(), timeout=5_000)
    assert "▶ Continue" in view.toPlainText()

    _click_text(qtbot, view, "▶ Continue")
    qtbot.waitUntil(lambda: REST in view.toPlainText(), timeout=10_000)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10_000)
    sent = [r.body["messages"][-1]["content"] for r in llama.chat_requests]
    assert sent[-1] == "continue"
    # The essay so far went with it: the engine continues that answer, not a new one.
    history = [m.get("content", "") for m in llama.chat_requests[-1].body["messages"]]
    assert any("river0 river1" in str(text) for text in history)
    # Once something else was said, the old cut no longer offers Continue.
    assert "▶ Continue" not in view.toPlainText()


def test_a_reopened_conversation_still_offers_continue_on_its_last_cut_answer(qtbot):
    from desktop.widgets.transcript import TranscriptView
    from engine.messages import assistant, notice, user

    view = TranscriptView()
    qtbot.addWidget(view)
    cut = notice("Cut at 40 tokens: the agent's output cap (max_tokens). Type 'continue'.")
    view.set_history(
        [
            user("first"),
            assistant("river " * 40),
            cut.with_meta(notice_kind="answer_cut"),
            user("second"),
            assistant("river " * 40),
            cut.with_meta(notice_kind="answer_cut"),
        ]
    )
    assert [r.action for r in view.rows() if r.kind == "notice"] == ["", "continue"]
    assert view.toPlainText().count("▶ Continue") == 1
