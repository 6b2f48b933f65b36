"""The approval dialog: the tool waits for the person, and runs only on an allow."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _scripted_write(fake: FakeLlamaServer) -> None:
    fake.script_reply(
        tool_calls=[FakeToolCall("write_file", {"path": "notes.md", "content": "# Notes\n"})]
    )
    fake.script_reply("I wrote notes.md.")


def test_the_approval_dialog_blocks_the_tool_until_answered(qtbot, real_desktop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192) as fake:
        _scripted_write(fake)
        d = real_desktop(agents={"a.toml": agent_toml("writer", fake.url)}, workspace=ws)
        _send(qtbot, d.window, "Write notes.md")
        qtbot.waitUntil(lambda: d.window.approval_dialog() is not None, timeout=10000)
        dialog = d.window.approval_dialog()
        assert dialog.isVisible()
        assert "Create notes.md" in dialog.summary.text()
        assert "# Notes" in dialog.detail.toPlainText()  # exactly what will be written
        qtbot.waitUntil(lambda: d.window.header.state() == "waiting for approval")
        qtbot.wait(300)  # the engine is waiting, not writing
        assert not (ws / "notes.md").exists()
        assert len(fake.chat_requests) == 1
        qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    assert (ws / "notes.md").read_text() == "# Notes\n"
    assert "I wrote notes.md." in d.window.transcript.toPlainText()
    tool = next(r for r in d.window.transcript.rows() if r.kind == "tool")
    assert tool.title.startswith("write_file") and "chars" in tool.status


def test_deny_changes_nothing_and_the_model_is_told(qtbot, real_desktop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192) as fake:
        _scripted_write(fake)
        d = real_desktop(agents={"a.toml": agent_toml("writer", fake.url)}, workspace=ws)
        _send(qtbot, d.window, "Write notes.md")
        qtbot.waitUntil(lambda: d.window.approval_dialog() is not None, timeout=10000)
        qtbot.mouseClick(d.window.approval_dialog().deny, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        told = fake.chat_requests[-1].body["messages"][-1]["content"]
    assert not (ws / "notes.md").exists()
    assert "denied by the user" in told
    tool = next(r for r in d.window.transcript.rows() if r.kind == "tool")
    assert tool.status == "error"


def test_always_for_this_conversation_is_not_asked_again(qtbot, real_desktop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192) as fake:
        _scripted_write(fake)
        fake.script_reply(
            tool_calls=[FakeToolCall("write_file", {"path": "more.md", "content": "more\n"})]
        )
        fake.script_reply("And more.md.")
        d = real_desktop(agents={"a.toml": agent_toml("writer", fake.url)}, workspace=ws)
        _send(qtbot, d.window, "Write notes.md")
        qtbot.waitUntil(lambda: d.window.approval_dialog() is not None, timeout=10000)
        qtbot.mouseClick(d.window.approval_dialog().allow_always, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        _send(qtbot, d.window, "And more.md")
        qtbot.waitUntil(lambda: (ws / "more.md").exists(), timeout=10000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    assert d.window.approval_dialog() is None


def test_esc_on_the_running_turn_withdraws_the_open_dialog(qtbot, real_desktop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192) as fake:
        _scripted_write(fake)
        d = real_desktop(agents={"a.toml": agent_toml("writer", fake.url)}, workspace=ws)
        _send(qtbot, d.window, "Write notes.md")
        qtbot.waitUntil(lambda: d.window.approval_dialog() is not None, timeout=10000)
        d.window.cancel_turn()  # what Esc in the composer asks for
        qtbot.waitUntil(lambda: d.window.approval_dialog() is None, timeout=10000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    assert not (ws / "notes.md").exists()
    assert d.window.header.state() == "ready"
    assert "Turn cancelled." in d.window.transcript.toPlainText()
