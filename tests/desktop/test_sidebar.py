"""The sidebar: agents and conversations — new, open, rename, delete with undo — and what a
restart restores."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from engine.store import Store
from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _chat(qtbot: Any, d: Any, text: str) -> None:
    _send(qtbot, d.window, text)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)


def _titles(d: Any, agent: str = "chat") -> list[str]:
    return d.window.sidebar.conversation_titles(agent)


def test_a_new_conversation_starts_empty_and_the_old_one_is_listed_by_its_first_message(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "Plan the garden")
        qtbot.waitUntil(lambda: _titles(d) == ["Plan the garden"])
        first = d.app.navigator.conversation_id
        qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != first)
        assert "Plan the garden" not in d.window.transcript.toPlainText()
        assert "turn" not in d.window.header.text()
        _chat(qtbot, d, "Fix the bike")
        qtbot.waitUntil(lambda: _titles(d) == ["Fix the bike", "Plan the garden"])
        item = d.window.sidebar.item_for(first)
        d.window.sidebar.tree.itemClicked.emit(item, 0)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == first)
        qtbot.waitUntil(lambda: "Plan the garden" in d.window.transcript.toPlainText())
        assert "Fix the bike" not in d.window.transcript.toPlainText()


def test_slash_new_in_the_composer_starts_a_new_conversation(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "Something to keep")
        first = d.app.navigator.conversation_id
        _send(qtbot, d.window, "/new")
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != first)
        assert d.window.composer.toPlainText() == ""
        assert "Something to keep" not in d.window.transcript.toPlainText()


def test_renaming_a_conversation_is_saved(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "untitled thoughts")
        conversation = d.app.navigator.conversation_id
        qtbot.waitUntil(lambda: _titles(d) == ["untitled thoughts"])
        d.window.sidebar.rename(conversation, "Garden plan")
        assert _titles(d) == ["Garden plan"]

        def saved() -> str:
            with Store.open(d.paths.db_path) as store:
                return store.get_conversation(conversation).title

        qtbot.waitUntil(lambda: saved() == "Garden plan")
        d.app.navigator.refresh()  # a fresh listing from the store says the same
        qtbot.wait(200)
        assert _titles(d) == ["Garden plan"]


def test_deleting_a_conversation_can_be_undone(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "Keep me")
        keep = d.app.navigator.conversation_id
        d.window.new_conversation()
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != keep)
        _chat(qtbot, d, "Delete me")
        qtbot.waitUntil(lambda: _titles(d) == ["Delete me", "Keep me"])
        d.window.sidebar.delete(keep)
        assert d.window.sidebar.undo_bar.isVisible()
        assert d.window.sidebar.undo_label.text() == "Deleted “Keep me”"
        assert _titles(d) == ["Delete me"]

        def deleted() -> bool:
            with Store.open(d.paths.db_path) as store:
                return store.get_conversation(keep) is None

        qtbot.waitUntil(deleted)
        qtbot.mouseClick(d.window.sidebar.undo_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: _titles(d) == ["Delete me", "Keep me"])
        assert not d.window.sidebar.undo_bar.isVisible()


def test_deleting_the_open_conversation_moves_to_a_new_one(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "Short-lived")
        current = d.app.navigator.conversation_id
        d.window.sidebar.delete(current)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != current)
        assert "Short-lived" not in d.window.transcript.toPlainText()


def test_the_window_geometry_and_the_last_conversation_come_back_on_restart(
    qtbot, real_desktop, tmp_path
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        agents = {"chat.toml": agent_toml("chat", fake.url)}
        d = real_desktop(agents=agents)
        _chat(qtbot, d, "Remember this conversation")
        conversation = d.app.navigator.conversation_id
        d.window.resize(1111, 777)
        qtbot.waitUntil(lambda: d.window.width() == 1111)
        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        assert again.app.navigator.conversation_id == conversation
        assert "Remember this conversation" in again.window.transcript.toPlainText()
        assert (again.window.width(), again.window.height()) == (1111, 777)
        assert "turn 1" in again.window.header.text()


def test_switching_to_another_agent_opens_its_own_session(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as one, FakeLlamaServer(n_ctx=8192) as two:
        two.script_reply("I am the second agent.")
        d = real_desktop(
            agents={"a.toml": agent_toml("alpha", one.url), "b.toml": agent_toml("beta", two.url)}
        )
        assert d.app.navigator.agent.name == "alpha"
        d.window.sidebar.open_requested.emit("beta", None)
        qtbot.waitUntil(lambda: d.app.navigator.agent.name == "beta")
        qtbot.waitUntil(lambda: "ctx" in d.window.header.text() and "/8K" in d.window.header.text())
        qtbot.waitUntil(lambda: not d.app.bridge.busy)  # the new session is open
        _chat(qtbot, d, "Who are you?")
        assert "I am the second agent." in d.window.transcript.toPlainText()
        assert d.window.header.text().startswith("beta")


def test_showing_the_list_never_reads_as_a_rename(qtbot, real_desktop):
    """Marking the open conversation in bold is a change of look, not of title: it must not
    write a rename (which refreshes the list, which marks it again, for ever)."""
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _chat(qtbot, d, "Plan the garden")
        qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not d.app.bridge.busy)
        _chat(qtbot, d, "Fix the bike")
        qtbot.waitUntil(lambda: _titles(d) == ["Fix the bike", "Plan the garden"])
        renames: list[tuple[str, str]] = []
        d.window.sidebar.rename_requested.connect(lambda *a: renames.append(a))
        d.app.navigator.refresh()
        d.window.sidebar.set_current("chat", d.app.navigator.conversation_id)
        qtbot.wait(300)
        assert renames == []
        item = d.window.sidebar.item_for(d.app.navigator.conversation_id)
        item.setText(0, "Fix the red bike")
        assert renames == [(d.app.navigator.conversation_id, "Fix the red bike")]
