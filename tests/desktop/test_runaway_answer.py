"""A runaway answer in the window: the cut is marked where the user reads, also after a
restart, and the editor shows the output cap and what a blank one means on this window."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer, Reply

ESSAY = " ".join(f"essay{i}" for i in range(20_000))


@pytest.fixture
def llama() -> Iterator[FakeLlamaServer]:
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        fake.default_reply = Reply(text=ESSAY)
        yield fake


def _notices(d: Any) -> list[str]:
    return [row.text for row in d.window.transcript.rows() if row.kind == "notice"]


def test_an_answer_cut_at_its_cap_is_marked_in_the_transcript_also_after_a_restart(
    qtbot: Any, real_desktop: Any, llama: FakeLlamaServer, tmp_path: Any
):
    d = real_desktop(agents={"chat.toml": agent_toml("chat", llama.url)})
    chat_and_wait(qtbot, d, "Write a very long essay about rivers.")
    kinds = [row.kind for row in d.window.transcript.rows()]
    cut = [t for t in _notices(d) if t.startswith("Cut at 1,024 tokens")]
    assert len(cut) == 1, _notices(d)
    assert kinds.index("notice", kinds.index("assistant")) == kinds.index("assistant") + 1
    assert llama.chat_requests[0].body["max_tokens"] == 1024
    d.app.navigator.save_window()
    d.app.shutdown()

    again = real_desktop(home=tmp_path / "home")
    qtbot.waitUntil(lambda: again.window.header.state() == "ready", timeout=10000)
    assert [t for t in _notices(again) if t.startswith("Cut at 1,024 tokens")] == cut


def _editor_after_a_turn(qtbot: Any, real_desktop: Any, llama: FakeLlamaServer) -> Any:
    """A llama-server agent after one turn (its window known: 4,096), its editor opened
    with `/agent`."""
    d = real_desktop(agents={"chat.toml": agent_toml("chat", llama.url)})
    chat_and_wait(qtbot, d, "hello")
    d.window.composer.setPlainText("/agent")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
    return d, d.app.agent_editing.dialog


def test_the_editor_shows_the_output_cap_with_what_a_blank_means_and_saves_it(
    qtbot: Any, real_desktop: Any, llama: FakeLlamaServer
):
    d, dialog = _editor_after_a_turn(qtbot, real_desktop, llama)
    field = dialog.field("max_tokens")
    assert isinstance(field, QLineEdit)
    assert field.placeholderText() == "blank: 1,024 (a quarter of 4,096)"
    field.setFocus()
    qtbot.keyClicks(field, "300")
    with qtbot.waitSignal(d.app.bridge.opened, timeout=10000):
        qtbot.keyClick(field, Qt.Key.Key_Return)
    assert "max_tokens = 300" in (d.paths.agents_dir / "chat.toml").read_text()
    chat_and_wait(qtbot, d, "Write a very long essay about rivers.")
    assert llama.chat_requests[-1].body["max_tokens"] == 300
    assert any(t.startswith("Cut at 300 tokens") for t in _notices(d))


def test_a_looping_answer_shows_as_saved_once_stopped_also_after_a_restart(
    qtbot: Any, real_desktop: Any, llama: FakeLlamaServer, tmp_path: Any
):
    line = "My name is Alex and I am very happy to meet you today.\n"
    llama.default_reply = Reply(text="Hello Alex!\n" + line * 3000, token_delay=0.001)
    d = real_desktop(agents={"chat.toml": agent_toml("chat", llama.url, max_tokens=3000)})
    chat_and_wait(qtbot, d, "my name is Alex")
    (answer,) = [r.text for r in d.window.transcript.rows() if r.kind == "assistant"]
    assert answer == "Hello Alex!\n" + line
    assert any(t.startswith("Stopped the answer: it kept repeating") for t in _notices(d))
    d.app.navigator.save_window()
    d.app.shutdown()

    again = real_desktop(home=tmp_path / "home")
    qtbot.waitUntil(lambda: again.window.header.state() == "ready", timeout=10000)
    assert [r.text for r in again.window.transcript.rows() if r.kind == "assistant"] == [answer]


def test_the_output_cap_hint_follows_a_pin_typed_in_the_editor(
    qtbot: Any, real_desktop: Any, llama: FakeLlamaServer
):
    _, dialog = _editor_after_a_turn(qtbot, real_desktop, llama)
    field = dialog.field("max_tokens")
    assert isinstance(field, QLineEdit)
    assert field.placeholderText() == "blank: 1,024 (a quarter of 4,096)"
    pin = dialog.field("num_ctx")
    pin.setFocus()
    qtbot.keyClicks(pin, "2048")
    assert field.placeholderText() == "blank: 512 (a quarter of 2,048)"
    dialog.reject()


def test_choosing_another_engine_in_the_editor_says_what_its_model_list_is(
    qtbot: Any, real_desktop: Any, llama: FakeLlamaServer
):
    from PySide6.QtWidgets import QComboBox

    _, dialog = _editor_after_a_turn(qtbot, real_desktop, llama)
    provider = dialog.field("provider")
    assert isinstance(provider, QComboBox)
    provider.setCurrentText("embedded")
    status = dialog.form.models_status
    qtbot.waitUntil(lambda: "embedded engine" in status.text(), timeout=5000)
    provider.setCurrentText("ollama")
    assert "embedded" not in status.text() and "ollama" in status.text()
    dialog.reject()
