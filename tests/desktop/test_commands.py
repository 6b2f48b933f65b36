"""Slash commands: completion in the composer, and the overlays that answer them."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt

from engine.context.work_state import work_folder_files
from engine.messages import ToolCall
from tests.helpers.exact_counter import FakeTemplateTokenizer


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_typing_a_slash_offers_the_commands_and_tab_takes_one(qtbot, open_desktop):
    d = open_desktop()
    qtbot.keyClicks(d.window.composer, "/co")
    qtbot.waitUntil(d.window.composer.completion_visible)
    assert d.window.composer.completion_candidates() == [
        "/compact",
        "/compaction",
        "/context",
        "/context show",
    ]
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Tab)
    assert d.window.composer.toPlainText() == "/compact"
    assert not d.window.composer.completion_visible()
    d.window.composer.clear()
    qtbot.keyClicks(d.window.composer, "/wo")
    qtbot.waitUntil(d.window.composer.completion_visible)
    assert d.window.composer.completion_candidates() == ["/work", "/work clear"]
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    assert not d.window.composer.completion_visible()
    assert d.window.composer.toPlainText() == "/wo"
    assert d.session.cancels == 0  # Esc closed the popup; it did not cancel anything


def test_ordinary_text_offers_no_commands(qtbot, open_desktop):
    d = open_desktop()
    qtbot.keyClicks(d.window.composer, "hello /co")
    assert not d.window.composer.completion_visible()


def test_up_recalls_the_last_message(qtbot, open_desktop):
    d = open_desktop()
    _send(qtbot, d.window, "the first message")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Up)
    assert d.window.composer.toPlainText() == "the first message"


def test_slash_context_opens_a_snapshot_that_esc_closes_without_cancelling_the_turn(
    qtbot, open_desktop
):
    d = open_desktop()
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "A long job")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    _send(qtbot, d.window, "/context")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible())
    assert d.window.overlay.kind == "context"
    assert d.window.overlay.title.text().startswith("/context — snapshot at ")
    text = d.window.overlay.text()
    assert "tokens available before auto-compact" in text
    # The system prompt as the engine's tokenizer counts it.
    system = FakeTemplateTokenizer(bos=False).count_message(d.session.history()[0])
    assert f"System prompt: {system}" in text
    assert f"Counting: {d.session.context_report().counting}" in text  # as headless prints it
    assert d.window.composer.toPlainText() == ""  # the command left the composer
    qtbot.keyClick(d.window.overlay, Qt.Key.Key_Escape)
    assert not d.window.overlay.isVisible()
    assert d.session.cancels == 0 and d.app.bridge.busy  # the turn keeps running
    for key, modifier in (
        (Qt.Key.Key_Q, Qt.KeyboardModifier.NoModifier),
        (Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier),
    ):
        _send(qtbot, d.window, "/context")
        qtbot.waitUntil(lambda: d.window.overlay.isVisible())
        qtbot.keyClick(d.window.overlay, key, modifier)
        assert not d.window.overlay.isVisible()
    assert d.session.cancels == 0 and d.app.bridge.busy
    assert d.sent == ["A long job"]  # no command reached the model
    assert d.engine.cancelled == 0


def test_the_context_snapshot_stays_fixed_while_the_rail_moves_on(qtbot, open_desktop):
    d = open_desktop()
    _send(qtbot, d.window, "one")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    shown = d.window.rail.report().used  # the next request, as the engine counts it
    _send(qtbot, d.window, "/context")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible())
    snapshot = d.window.overlay.context_view.rail
    frozen = snapshot.report().used
    d.window.overlay.close_overlay()
    _send(qtbot, d.window, "two " * 500)  # a longer message: the next request grows
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert frozen == shown
    second = d.engine.requests[-1].prompt_tokens
    assert frozen < second < d.window.rail.report().used
    assert snapshot.report().used == frozen


def test_slash_usage_lists_requests_and_says_local_engines_have_no_price(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script(prompt_tokens=1200, completion_tokens=80, cached_tokens=0)
    _send(qtbot, d.window, "hi")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    _send(qtbot, d.window, "/usage")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible() and d.window.overlay.kind == "usage")
    text = d.window.overlay.text()
    # The in-process engine is of llama-server's kind.
    assert "llamacpp/SmolLM2-135M-Instruct 1 req · 1.2K in (0 cached) · 80 out" in text
    assert "(no published price)" in text
    assert "total 1 req" in text


def test_slash_work_shows_the_work_state_and_work_clear_forgets_it(qtbot, open_desktop, tmp_path):
    (tmp_path / "work").mkdir()
    d = open_desktop(workspace=tmp_path / "work")
    # The model records its work state with the tool, then answers.
    patch = {"goal": "ship the release", "todos": [{"content": "tag it", "status": "pending"}]}
    d.engine.script("", tool_calls=[ToolCall("c1", "update_work_state", json.dumps(patch))])
    d.engine.script("Noted.")
    _send(qtbot, d.window, "Keep track of the release.")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    _send(qtbot, d.window, "/work")
    qtbot.waitUntil(lambda: d.window.overlay.isVisible())
    assert "goal: ship the release\ntodos:\n- [pending] tag it" in d.window.overlay.text()
    d.window.overlay.close_overlay()
    _send(qtbot, d.window, "/work clear")
    qtbot.waitUntil(lambda: "Work state cleared" in d.window.transcript.toPlainText())
    session = d.session
    folder = session.paths.conversation_dir(session.agent.name, session.conversation_id)
    assert work_folder_files(folder)[1].read() == {}  # forgotten, on disk too
    assert session.received == ["Keep track of the release.", "/work", "/work clear"]
    assert d.sent == ["Keep track of the release."]  # the commands reached no model


def test_slash_compact_is_sent_as_an_intent_not_shown_as_a_message(qtbot, open_desktop):
    d = open_desktop()
    _send(qtbot, d.window, "/compact")
    qtbot.waitUntil(lambda: d.session.received == ["/compact"] and not d.app.bridge.busy)
    assert [r.kind for r in d.window.transcript.rows() if r.kind == "user"] == []
    assert d.sent == []  # not a message to the model


# -- commands whose answer is a view: the engine routes them, the window opens the view ----


def test_every_typed_text_goes_to_the_session_which_asks_for_the_view(qtbot, open_desktop):
    d = open_desktop()
    asked: list[str] = []
    d.window.agent_editor_requested.connect(lambda: asked.append("agent_editor"))
    _send(qtbot, d.window, "  /agent ")
    qtbot.waitUntil(lambda: asked == ["agent_editor"])
    assert d.window.composer.toPlainText() == ""
    assert d.session.received == ["  /agent "]
    assert d.sent == []  # a view, not a turn
    # A desk opens the view, so the words for a front end without one are not shown.
    assert "Edit the agent" not in d.window.transcript.toPlainText()


def test_a_view_no_desk_opens_falls_back_to_the_engines_words(qtbot, open_desktop):
    d = open_desktop()  # no memory desk in this window
    _send(qtbot, d.window, "/memory review")
    qtbot.waitUntil(lambda: "brim memory review" in d.window.transcript.toPlainText())
    assert [r.kind for r in d.window.transcript.rows() if r.kind == "user"] == []


def test_slash_memory_opens_the_browser_while_a_turn_runs(qtbot, memory_desktop):
    d = memory_desktop()
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "A long job")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    _send(qtbot, d.window, "/memory")
    qtbot.waitUntil(lambda: d.desk.browser is not None and d.desk.browser.isVisible())
    assert d.app.bridge.busy and d.session.cancels == 0  # the turn runs on
    assert "brim memory review" not in d.window.transcript.toPlainText()
    d.desk.browser.close()
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)


def test_slash_new_comes_back_as_a_new_conversation_the_window_shows(qtbot, open_desktop):
    d = open_desktop()
    _send(qtbot, d.window, "first words")
    qtbot.waitUntil(lambda: "Hello from the fake." in d.window.transcript.toPlainText())
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    before = d.session.conversation_id
    with qtbot.waitSignal(d.app.bridge.opened, timeout=5000) as opened:
        _send(qtbot, d.window, "/new")
    assert opened.args[0].conversation_id == d.session.conversation_id != before
    assert "first words" not in d.window.transcript.toPlainText()


def test_a_command_refused_while_a_turn_runs_says_why_and_stays(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script("working", hold=True)
    _send(qtbot, d.window, "A long job")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    _send(qtbot, d.window, "/new")
    qtbot.waitUntil(lambda: "still running" in d.window.banner.text())  # the session says so
    assert d.window.composer.toPlainText() == "/new"
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)


def test_the_slash_popup_shows_whole_descriptions_and_stays_inside_the_window(qtbot, open_desktop):
    d = open_desktop()
    d.window.resize(900, 600)
    qtbot.waitUntil(lambda: d.window.width() == 900)
    d.window.composer.setFocus()
    qtbot.keyClicks(d.window.composer, "/")
    qtbot.waitUntil(d.window.composer.completion_visible)
    popup = d.window.composer._completer.popup()
    window = d.window
    inside = window.geometry().adjusted(-1, -1, 1, 1)  # the client area, in global terms
    inside.moveTopLeft(window.mapToGlobal(inside.topLeft() - window.geometry().topLeft()))
    assert inside.contains(popup.geometry()), (popup.geometry(), inside)
    model = d.window.composer._completer.completionModel()
    metrics = popup.fontMetrics()
    for row in range(model.rowCount()):
        description = str(model.index(row, 1).data())
        shown = popup.visualRect(model.index(row, 1)).width()
        assert shown >= metrics.horizontalAdvance(description), description
