"""Agents made and kept in the window: New agent, Duplicate, Delete with Undo, the agents
folder followed on disk, and "+ New conversation" for the agent picked in the sidebar. The
whole app on a data folder, real sessions, fake llama-servers on loopback."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer


def _agent_item(d: Any, name: str) -> Any:
    tree = d.window.sidebar.tree
    for index in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(index)
        if item.data(0, Qt.ItemDataRole.UserRole)[1] == name:
            return item
    return None


def _agent_names(d: Any) -> list[str]:
    tree = d.window.sidebar.tree
    return [
        tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)[1]
        for i in range(tree.topLevelItemCount())
    ]


def _select_agent(qtbot: Any, d: Any, name: str) -> None:
    item = _agent_item(d, name)
    tree = d.window.sidebar.tree
    tree.scrollToItem(item)
    qtbot.mouseClick(
        tree.viewport(), Qt.MouseButton.LeftButton, pos=tree.visualItemRect(item).center()
    )
    assert tree.currentItem() is item


def _type(qtbot: Any, widget: Any, text: str) -> None:
    editor = widget.lineEdit() if isinstance(widget, QComboBox) else widget
    assert isinstance(editor, QLineEdit)
    editor.setFocus()
    editor.selectAll()
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    qtbot.keyClicks(editor, text)


def test_a_new_agent_made_in_the_window_chats_without_a_restart(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as first, FakeLlamaServer(n_ctx=8192) as second:
        second.script_reply("Hello from the new agent.")
        d = real_desktop(agents={"a.toml": agent_toml("alpha", first.url)})
        qtbot.mouseClick(d.window.sidebar.new_agent_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
        dialog = d.app.agent_editing.dialog
        assert dialog.field("name").text() == "New agent"
        assert dialog.field("provider").currentText() == "llamacpp"  # like the open agent
        _type(qtbot, dialog.field("name"), "helper")
        _type(qtbot, dialog.field("base_url"), second.url)
        qtbot.keyClick(dialog.field("base_url"), Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is None, timeout=5000)
        qtbot.waitUntil(lambda: "helper" in _agent_names(d), timeout=5000)

        _select_agent(qtbot, d, "helper")
        with qtbot.waitSignal(d.app.bridge.opened, timeout=10000):
            qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
        assert d.app.navigator.agent.name == "helper"
        chat_and_wait(qtbot, d, "Who are you?")
        assert "Hello from the new agent." in d.window.transcript.toPlainText()
        assert len(second.chat_requests) == 1 and not first.chat_requests
        assert 'name = "helper"' in (d.paths.agents_dir / "new-agent.toml").read_text()


def test_slash_agent_new_opens_the_editor_on_a_new_agent_file(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("alpha", fake.url)})
        d.window.composer.setPlainText("/agent new")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
        dialog = d.app.agent_editing.dialog
        assert dialog.original.source_path == d.paths.agents_dir / "new-agent.toml"
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: "New agent" in _agent_names(d), timeout=5000)


def test_new_conversation_starts_one_with_the_agent_selected_in_the_sidebar(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as one, FakeLlamaServer(n_ctx=8192) as two:
        two.script_reply("Beta here.")
        d = real_desktop(
            agents={"a.toml": agent_toml("alpha", one.url), "b.toml": agent_toml("beta", two.url)}
        )
        assert d.app.navigator.agent.name == "alpha"
        _select_agent(qtbot, d, "beta")
        with qtbot.waitSignal(d.app.bridge.opened, timeout=10000):
            qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
        assert d.app.navigator.agent.name == "beta"
        assert d.window.header.text().startswith("beta")
        chat_and_wait(qtbot, d, "Who is this?")
        assert "Beta here." in d.window.transcript.toPlainText()
        assert len(two.chat_requests) == 1 and not one.chat_requests


def test_an_agent_file_dropped_into_the_folder_appears_within_two_seconds_and_a_broken_one_shows_its_error(  # noqa: E501
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("alpha", fake.url)})
        folder = d.paths.agents_dir
        started = time.monotonic()
        (folder / "coder.toml").write_text(agent_toml("coder", fake.url), encoding="utf-8")
        qtbot.waitUntil(lambda: "coder" in _agent_names(d), timeout=2000)
        assert time.monotonic() - started < 2.0

        (folder / "broken.toml").write_text('name = "broken"\nnum_cxt = 8192\n', "utf-8")
        qtbot.waitUntil(lambda: "broken.toml" in _agent_names(d), timeout=2000)
        item = _agent_item(d, "broken.toml")
        assert item.text(0).startswith("⚠")
        assert "num_cxt" in item.child(0).text(0)  # the error, in place, under the file

        (folder / "coder.toml").write_text(agent_toml("coder-renamed", fake.url), "utf-8")
        qtbot.waitUntil(lambda: "coder-renamed" in _agent_names(d), timeout=2000)
        assert "coder" not in _agent_names(d)
        (folder / "coder.toml").unlink()
        qtbot.waitUntil(lambda: "coder-renamed" not in _agent_names(d), timeout=2000)


def test_duplicating_an_agent_copies_its_file_and_deleting_it_can_be_undone(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        text = "# my notes stay\n" + agent_toml("alpha", fake.url, temperature=0.3)
        d = real_desktop(agents={"a.toml": agent_toml("main", fake.url), "alpha.toml": text})
        sidebar = d.window.sidebar
        sidebar.duplicate_agent_requested.emit("alpha")  # the agent's menu: Duplicate agent
        qtbot.waitUntil(lambda: "alpha copy" in _agent_names(d), timeout=5000)
        copy = (d.paths.agents_dir / "alpha-copy.toml").read_text(encoding="utf-8")
        assert copy.startswith("# my notes stay") and 'name = "alpha copy"' in copy
        assert "temperature = 0.3" in copy

        sidebar.delete_agent_requested.emit("alpha copy")  # the agent's menu: Delete agent
        qtbot.waitUntil(lambda: "alpha copy" not in _agent_names(d), timeout=5000)
        assert not (d.paths.agents_dir / "alpha-copy.toml").exists()
        assert sidebar.undo_bar.isVisible() and "alpha copy" in sidebar.undo_label.text()
        qtbot.mouseClick(sidebar.undo_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "alpha copy" in _agent_names(d), timeout=5000)
        assert (d.paths.agents_dir / "alpha-copy.toml").read_text(encoding="utf-8") == copy


def test_the_editor_shows_every_setting_of_the_schema_each_with_its_own_letter(qtbot, real_desktop):
    from desktop.agent_fields import MNEMONICS
    from engine.api import AGENT_FIELDS

    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("alpha", fake.url, temperature=0.4)})
        qtbot.mouseClick(d.window.sidebar.edit_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
        dialog = d.app.agent_editing.dialog
        shown = {
            spec.name for spec in AGENT_FIELDS if dialog.findChild(object, f"field_{spec.name}")
        }
        # every setting the form has a widget kind for; the [[mcp]] tables have their own
        # section (desktop/mcp_section.py)
        assert shown == {spec.name for spec in AGENT_FIELDS if spec.type != "mcp"}
        assert dialog.findChild(object, "mcpSection") or dialog.mcp_section is not None
        for name in ("name", "temperature", "request_timeout_s", "api_key_env"):
            assert dialog.field(name).isVisibleTo(dialog)
        assert dialog.field("temperature").text() == "0.4"
        letters = [letter.lower() for letter in MNEMONICS.values()]
        assert len(letters) == len(set(letters))
        # each letter of a field this agent's engine uses (the embedded engine's own are
        # greyed out here) takes the focus to that field
        visible = [
            n
            for n in MNEMONICS
            if dialog.field(n).isVisibleTo(dialog) and dialog.field(n).isEnabledTo(dialog)
        ]
        assert len(visible) >= 10
        failed: list[str] = []
        for name in visible:
            key = getattr(Qt.Key, f"Key_{MNEMONICS[name].upper()}")
            qtbot.keyClick(dialog, key, Qt.KeyboardModifier.AltModifier)
            failed.append(name) if dialog.focusWidget() is not dialog.field(name) else None
        assert failed == [], failed
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)


def test_a_setting_added_to_the_schema_gets_a_box_and_a_letter_without_an_editor_edit(
    monkeypatch,
):
    import dataclasses

    from desktop import agent_fields
    from engine.api import AGENT_FIELDS

    run = next(spec for spec in AGENT_FIELDS if spec.name == "max_iterations")  # a "run" one
    gpu = dataclasses.replace(run, name="gpu_layers", type="int", label="GPU layers")
    kv = dataclasses.replace(run, name="kv_cache", type="choice", group="cache")
    table = dataclasses.replace(run, name="mcp", type="tables")  # no widget for it
    monkeypatch.setattr(agent_fields, "AGENT_FIELDS", (*AGENT_FIELDS, gpu, kv, table))

    boxes = dict(agent_fields.sections())
    assert boxes["Run"][-1] == "gpu_layers"
    assert boxes["Cache"] == ("kv_cache",)
    assert "mcp" not in {name for names in boxes.values() for name in names}
    letters = agent_fields.mnemonics(agent_fields.edited_specs())
    assert "gpu_layers" in letters
    assert len({letter.lower() for letter in letters.values()}) == len(letters)


def test_a_hand_edit_of_the_open_agents_file_reaches_the_next_request(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("alpha", fake.url, temperature=0.2)})
        chat_and_wait(qtbot, d, "first")
        assert fake.chat_requests[-1].body["temperature"] == 0.2
        file = d.paths.agents_dir / "a.toml"
        with qtbot.waitSignal(d.app.bridge.opened, timeout=3000):  # reopened with the edit
            file.write_text(agent_toml("alpha", fake.url, temperature=0.9), encoding="utf-8")
        chat_and_wait(qtbot, d, "second")
        assert fake.chat_requests[-1].body["temperature"] == 0.9
        assert "first" in d.window.transcript.toPlainText()  # the same conversation


def test_an_agent_with_conversations_keeps_its_name_in_the_editor_and_says_why(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("alpha", fake.url)})
        chat_and_wait(qtbot, d, "something to keep")
        qtbot.waitUntil(lambda: d.window.sidebar.conversation_titles("alpha") != [])
        qtbot.mouseClick(d.window.sidebar.edit_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
        dialog = d.app.agent_editing.dialog
        assert dialog.field("name").isReadOnly()
        assert "1 conversation is filed under this name" in dialog.form.name_note.text()
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)


def test_the_start_up_warning_about_a_broken_agent_file_goes_once_the_file_is_fixed(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(
            agents={
                "a.toml": agent_toml("alpha", fake.url),
                "typo.toml": 'name = "typo"\nnum_cxt = 1\n',
            }
        )
        banner = d.window.setup_banner
        assert banner.isVisible() and "typo.toml" in banner.text()
        (d.paths.agents_dir / "typo.toml").write_text(agent_toml("typo", fake.url), "utf-8")
        qtbot.waitUntil(lambda: "typo" in _agent_names(d), timeout=2000)
        assert not banner.isVisible()


class _NoEngine:
    """The editor's engine calls, never answered (no model list, no probe)."""

    def call(self, fn: Any, on_result: Any, on_error: Any = None) -> bool:
        return True


def test_the_embedded_engine_gets_a_gguf_file_picker_and_a_server_does_not(
    qtbot, tmp_path, monkeypatch
):
    from desktop import agent_models
    from desktop.agent_editor import AgentEditorDialog
    from engine.api import load_agent

    file = tmp_path / "a.toml"
    file.write_text(agent_toml("alpha", "http://127.0.0.1:9"), encoding="utf-8")
    dialog = AgentEditorDialog(load_agent(file), _NoEngine())
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.form.browse_button.isVisible()  # llamacpp serves its own models
    dialog.field("provider").setCurrentText("embedded")
    assert dialog.form.browse_button.isVisible()
    model = tmp_path / "Qwen3-0.6B-Q8_0.gguf"
    monkeypatch.setattr(
        agent_models.QFileDialog, "getOpenFileName", lambda *a, **k: (str(model), "")
    )
    qtbot.mouseClick(dialog.form.browse_button, Qt.MouseButton.LeftButton)
    assert dialog.field("model").currentText() == str(model)
    assert dialog.edited().model == str(model)
    dialog.reject()
