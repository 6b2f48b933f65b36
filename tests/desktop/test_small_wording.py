"""Small words that misled: `/work` without tools, `/learn`'s steps."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.learn_progress import LearnProgressDialog
from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_work_without_tools_does_not_promise_a_tool_the_agent_lacks(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=8192, slots=1) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("local", fake.url)})  # no folder
        qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
        _send(qtbot, d.window, "/work")
        qtbot.waitUntil(lambda: d.window.overlay.isVisible(), timeout=5_000)
        shown = d.window.overlay.text()
    assert "update_work_state" not in shown
    assert "no tools" in shown


def test_work_with_tools_says_how_the_agent_records_one(qtbot, real_desktop, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    with FakeLlamaServer(n_ctx=8192, slots=1) as fake:
        d = real_desktop(agents={"a.toml": agent_toml("local", fake.url)}, workspace=folder)
        qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
        _send(qtbot, d.window, "/work")
        qtbot.waitUntil(lambda: d.window.overlay.isVisible(), timeout=5_000)
        assert "update_work_state" in d.window.overlay.text()


def test_learn_names_the_part_once_and_counts_steps_in_its_bar(qtbot):
    dialog = LearnProgressDialog()
    qtbot.addWidget(dialog)
    dialog.set_progress(1, 3, "Reading part 1 of 2")
    assert dialog.stage.text() == "Reading part 1 of 2"
    assert dialog.bar.text() == "step 1 of 3"
