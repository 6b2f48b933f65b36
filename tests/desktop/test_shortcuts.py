"""The window's keyboard shortcuts do what their buttons and commands do, wherever the focus."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from engine.store import Store
from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer


def test_ctrl_n_starts_a_new_conversation_and_ctrl_l_returns_to_the_composer(
    qtbot: Any, real_desktop: Any
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        garden = d.app.navigator.conversation_id
        d.window.sidebar.tree.setFocus()  # the shortcut works away from the composer too
        qtbot.keyClick(d.window.sidebar.tree, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id not in (None, garden))
        assert "Plan the garden" not in d.window.transcript.toPlainText()

        d.window.sidebar.tree.setFocus()
        qtbot.keyClick(d.window.sidebar.tree, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: QApplication.focusWidget() is d.window.composer)


def test_f2_renames_the_open_conversation_in_place(qtbot: Any, real_desktop: Any):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        conversation = d.app.navigator.conversation_id
        qtbot.keyClick(d.window.composer, Qt.Key.Key_F2)
        qtbot.waitUntil(lambda: isinstance(QApplication.focusWidget(), QLineEdit))
        editor = QApplication.focusWidget()
        d.app.navigator.refresh()  # a listing that lands mid-edit must not throw it away
        qtbot.wait(300)
        assert QApplication.focusWidget() is editor
        editor.selectAll()
        qtbot.keyClicks(editor, "Garden plan")
        qtbot.keyClick(editor, Qt.Key.Key_Return)

        def saved() -> str:
            with Store.open(d.paths.db_path) as store:
                return store.get_conversation(conversation).title

        qtbot.waitUntil(lambda: saved() == "Garden plan", timeout=5000)
        qtbot.waitUntil(lambda: d.window.sidebar.conversation_titles("chat") == ["Garden plan"])


def test_ctrl_comma_opens_the_agent_editor_and_ctrl_q_closes_the_window(
    qtbot: Any, real_desktop: Any
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10000)
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
        dialog = d.app.agent_editing.dialog
        qtbot.waitUntil(dialog.isVisible)
        assert dialog.windowTitle()
        dialog.reject()
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is None)
        d.window.activateWindow()  # back from the dialog
        qtbot.waitUntil(d.window.isActiveWindow)
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: not d.window.isVisible())


def test_esc_stops_the_answer_while_the_sidebar_has_the_focus(qtbot: Any, open_desktop: Any):
    d = open_desktop()
    d.engine.script("working", hold=True)
    d.window.composer.setPlainText("A long job")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    d.window.sidebar.tree.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is d.window.sidebar.tree)
    qtbot.keyClick(d.window.sidebar.tree, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=5000)
    assert d.session.cancels == 1
    qtbot.waitUntil(lambda: "Turn cancelled." in d.window.transcript.toPlainText(), timeout=3000)
