"""A folder given to a model that cannot call tools: the window says so once, and the model
is sent nothing that names a tool."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer

NO_TOOLS = {"supports_tools": False, "supports_system_role": True}


def _tool_rows(window: Any) -> list[str]:
    return [
        row.text
        for row in window.transcript.rows()
        if row.kind == "notice" and "cannot call tools" in row.text
    ]


def test_the_window_says_once_that_the_model_cannot_use_the_folder(qtbot, real_desktop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeLlamaServer(n_ctx=8192, template_caps=NO_TOOLS) as fake:
        fake.script_reply("I cannot see your files.")
        fake.script_reply("Still here.")
        d = real_desktop(agents={"a.toml": agent_toml("chat", fake.url)}, workspace=ws)
        qtbot.waitUntil(lambda: len(_tool_rows(d.window)) == 1, timeout=10000)
        for text in ("What is in calc.py?", "And in main.py?"):
            d.window.composer.setPlainText(text)
            qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
            qtbot.waitUntil(lambda t=text: t in d.window.transcript.toPlainText(), timeout=10000)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        sent = [r.body for r in fake.chat_requests]
    (row,) = _tool_rows(d.window)
    assert str(ws) in row
    assert len(sent) == 2 and all(not body.get("tools") for body in sent)
    system = sent[-1]["messages"][0]
    assert system["role"] == "system"
    assert "tool" not in system["content"].lower() and str(ws) not in system["content"]
