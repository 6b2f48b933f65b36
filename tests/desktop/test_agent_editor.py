"""The agent editor, driven as a user would: the whole app on a data folder, real sessions,
fake engines on loopback. A pin set in the dialog reaches the engine on the next request; a
probe tells the truth about it; the file keeps its comments; another program's edit wins."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QComboBox, QLineEdit

from desktop.agent_editor import DIALOG_SIZE, AgentEditorDialog
from engine.providers import bundled_models
from tests.desktop.make_agent_editor_shot import make_agent_editor_shot
from tests.helpers.fake_engines import FakeOllama, FakeVllm, OllamaModel

OLLAMA_MODEL = "llama3.1:8b"
VLLM_MODEL = "Qwen/Qwen2.5-7B-Instruct"


def commented_agent(name: str, provider: str, url: str, model: str) -> str:
    """An agent file as a person keeps it: comments, blank lines, a commented-out key."""
    return (
        f"# {name}: the agent I use for long documents\n"
        "\n"
        f'name = "{name}"\n'
        f'provider = "{provider}"   # the box under the desk\n'
        f'base_url = "{url}"\n'
        f'model = "{model}"\n'
        "\n"
        "# A ceiling on the window Brim uses; it only ever lowers it.\n"
        "# max_context_tokens = 32768\n"
        "\n"
        "# Keep answers short.\n"
        "temperature = 0.2\n"
    )


def open_editor(qtbot: Any, d: Any, via: str = "command") -> AgentEditorDialog:
    if via == "command":
        d.window.composer.setPlainText("/agent")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    else:
        qtbot.mouseClick(d.window.sidebar.edit_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None, timeout=5000)
    dialog = d.app.agent_editing.dialog
    qtbot.waitUntil(dialog.isVisible)
    return dialog


def type_into(qtbot: Any, dialog: AgentEditorDialog, name: str, text: str) -> None:
    widget = dialog.field(name)
    editor = widget.lineEdit() if isinstance(widget, QComboBox) else widget
    assert isinstance(editor, QLineEdit)
    editor.setFocus()
    editor.selectAll()
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    if text:
        qtbot.keyClicks(editor, text)


def save_and_wait_for_the_new_session(qtbot: Any, d: Any, dialog: AgentEditorDialog) -> None:
    with qtbot.waitSignal(d.app.bridge.opened, timeout=10000):
        qtbot.keyClick(dialog.field("num_ctx"), Qt.Key.Key_Return)
    assert d.app.agent_editing.dialog is None


def probe(qtbot: Any, dialog: AgentEditorDialog) -> None:
    qtbot.keyClick(dialog, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: dialog.comparison is not None and not dialog.probing(), timeout=10000)


def chat(qtbot: Any, d: Any, text: str) -> None:
    d.window.composer.setPlainText(text)
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)


def table_row(dialog: AgentEditorDialog, label: str) -> tuple[str, str]:
    table = dialog.table
    for row in range(table.rowCount()):
        if table.item(row, 0).text() == label:
            return table.item(row, 1).text(), table.item(row, 2).text()
    raise AssertionError(f"no row {label!r}")


@pytest.fixture
def ollama() -> Any:
    with FakeOllama([OllamaModel(OLLAMA_MODEL, context_length=131072)], default_num_ctx=4096) as f:
        yield f


@pytest.fixture
def vllm() -> Any:
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as fake:
        yield fake


def test_pinning_num_ctx_in_the_editor_sends_it_to_ollama_and_the_header_says_pinned(
    qtbot, real_desktop, ollama
):
    d = real_desktop(
        agents={"docs.toml": commented_agent("docs", "ollama", ollama.url, OLLAMA_MODEL)}
    )
    assert "pinned" not in d.window.header.text()
    dialog = open_editor(qtbot, d)
    type_into(qtbot, dialog, "num_ctx", "16384")
    save_and_wait_for_the_new_session(qtbot, d, dialog)
    qtbot.waitUntil(lambda: "pinned" in d.window.header.text())

    chat(qtbot, d, "Summarize the report")

    assert ollama.chat_requests[-1].body["options"]["num_ctx"] == 16384
    assert "ctx" in d.window.header.text() and "/16K pinned" in d.window.header.text()
    assert "num_ctx = 16384" in (d.paths.agents_dir / "docs.toml").read_text(encoding="utf-8")


def test_a_save_while_a_turn_runs_takes_effect_from_the_next_request(qtbot, real_desktop, ollama):
    d = real_desktop(agents={"o.toml": commented_agent("o", "ollama", ollama.url, OLLAMA_MODEL)})
    ollama.script_reply(" ".join(["slowly"] * 30), token_delay=0.05)
    d.window.composer.setPlainText("Write a long answer")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: d.app.bridge.busy)
    dialog = open_editor(qtbot, d, via="sidebar")
    type_into(qtbot, dialog, "num_ctx", "8192")
    with qtbot.waitSignal(d.app.bridge.opened, timeout=15000):
        qtbot.keyClick(dialog.field("num_ctx"), Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is None)
        assert "once this turn ends" in d.window.transcript.toPlainText()

    chat(qtbot, d, "And now?")
    first, last = ollama.chat_requests[0].body, ollama.chat_requests[-1].body
    assert "num_ctx" not in (first.get("options") or {})
    assert last["options"]["num_ctx"] == 8192
    assert "slowly" in d.window.transcript.toPlainText()  # the running answer was kept


def test_a_pin_above_what_vllm_serves_is_warned_about_and_the_served_window_stays_effective(
    qtbot, real_desktop, vllm
):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    dialog = open_editor(qtbot, d, via="sidebar")
    type_into(qtbot, dialog, "num_ctx", "65536")
    probe(qtbot, dialog)

    assert any("65536" in w and "ignored" in w for w in dialog.warning_texts())
    assert table_row(dialog, "Served by the engine now") == ("32,768", "32,768")
    assert table_row(dialog, "Pin (num_ctx)") == ("none", "65,536")
    assert table_row(dialog, "Effective window") == ("32,768", "32,768")
    assert table_row(dialog, "Window source") == ("server", "server")

    save_and_wait_for_the_new_session(qtbot, d, dialog)
    qtbot.waitUntil(lambda: "/32K server" in d.window.header.text())
    assert "ignored" in d.window.transcript.toPlainText()


def test_a_ceiling_set_in_the_editor_lowers_the_rails_window(qtbot, real_desktop, vllm):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    qtbot.waitUntil(lambda: (d.window.rail.report() or None) is not None)
    qtbot.waitUntil(lambda: d.window.rail.report().window == 32768)
    dialog = open_editor(qtbot, d)
    type_into(qtbot, dialog, "max_context_tokens", "12000")
    save_and_wait_for_the_new_session(qtbot, d, dialog)

    qtbot.waitUntil(lambda: d.window.rail.report().window == 12000)
    assert "ceiling" in d.window.rail.text()
    chat(qtbot, d, "Hello")
    assert d.window.rail.report().window == 12000
    assert "/12K ceiling" in d.window.header.text()


def test_an_invalid_value_is_refused_in_its_field_with_the_reason_and_enter_does_not_save(
    qtbot, real_desktop, vllm
):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    before = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    dialog = open_editor(qtbot, d)

    type_into(qtbot, dialog, "num_ctx", "lots")
    assert "must be an integer" in dialog.problem_text("num_ctx").lower()
    assert "'lots'" in dialog.problem_text("num_ctx")
    assert not dialog.save_button.isEnabled()
    qtbot.keyClick(dialog.field("num_ctx"), Qt.Key.Key_Return)
    assert dialog.isVisible()

    type_into(qtbot, dialog, "num_ctx", "100")
    assert "≥ 256" in dialog.problem_text("num_ctx")
    type_into(qtbot, dialog, "compaction_ratio", "1.5")
    assert "from 0.1 to 0.99" in dialog.problem_text("compaction_ratio")
    type_into(qtbot, dialog, "base_url", "ftp://nowhere")
    assert "http://" in dialog.problem_text("base_url")
    assert not dialog.save_button.isEnabled()

    type_into(qtbot, dialog, "num_ctx", "")  # blank: unset, which is valid
    type_into(qtbot, dialog, "compaction_ratio", "0.75")
    type_into(qtbot, dialog, "base_url", vllm.url)
    assert dialog.problem_text("num_ctx") == ""
    assert dialog.save_button.isEnabled()

    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: d.app.agent_editing.dialog is None)
    assert (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8") == before


def test_an_edit_by_another_program_meanwhile_is_reported_and_not_overwritten(
    qtbot, real_desktop, vllm
):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    path = d.paths.agents_dir / "q.toml"
    dialog = open_editor(qtbot, d)
    theirs = path.read_text(encoding="utf-8").replace("temperature = 0.2", "temperature = 0.9")
    path.write_text(theirs, encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000))

    type_into(qtbot, dialog, "num_ctx", "8192")
    qtbot.keyClick(dialog.field("num_ctx"), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not dialog.conflict.isHidden(), timeout=5000)

    assert "changed by another program" in dialog.conflict_text.text()
    assert "Nothing was saved" in dialog.conflict_text.text()
    assert dialog.isVisible()
    assert path.read_text(encoding="utf-8") == theirs

    qtbot.keyClick(dialog, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)  # Discard and reload
    qtbot.waitUntil(lambda: dialog.conflict.isHidden(), timeout=5000)
    assert dialog.edited().num_ctx is None
    assert dialog.edited().temperature == 0.9
    save_and_wait_for_the_new_session(qtbot, d, dialog)
    assert path.read_text(encoding="utf-8") == theirs  # nothing changed: nothing rewritten


def test_comments_and_layout_survive_a_save_from_the_editor(qtbot, real_desktop, vllm):
    original = commented_agent("q", "vllm", vllm.url, VLLM_MODEL)
    d = real_desktop(agents={"q.toml": original})
    dialog = open_editor(qtbot, d)
    type_into(qtbot, dialog, "max_context_tokens", "16000")
    type_into(qtbot, dialog, "num_ctx", "8192")
    save_and_wait_for_the_new_session(qtbot, d, dialog)

    saved = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    assert saved.startswith(original.split("\n\n# A ceiling")[0])
    assert "# the box under the desk" in saved
    assert "# max_context_tokens = 32768\nmax_context_tokens = 16000\n" in saved
    assert "# Keep answers short.\ntemperature = 0.2\n" in saved
    assert "num_ctx = 8192" in saved


def test_a_blank_ceiling_removes_the_key_from_the_file(qtbot, real_desktop, vllm):
    text = commented_agent("q", "vllm", vllm.url, VLLM_MODEL) + "max_context_tokens = 9000\n"
    d = real_desktop(agents={"q.toml": text})
    dialog = open_editor(qtbot, d)
    assert dialog.field("max_context_tokens").text() == "9000"
    type_into(qtbot, dialog, "max_context_tokens", "")
    save_and_wait_for_the_new_session(qtbot, d, dialog)

    saved = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    assert "max_context_tokens = 9000" not in saved
    assert "# max_context_tokens = 32768" in saved
    qtbot.waitUntil(
        lambda: d.window.rail.report() is not None and d.window.rail.report().window == 32768
    )


def test_the_model_picker_lists_what_the_engine_serves(qtbot, real_desktop):
    models = [OllamaModel(OLLAMA_MODEL), OllamaModel("qwen3:8b", arch="qwen3")]
    with FakeOllama(models) as fake:
        d = real_desktop(agents={"o.toml": commented_agent("o", "ollama", fake.url, OLLAMA_MODEL)})
        dialog = open_editor(qtbot, d)
        combo = dialog.field("model")
        assert isinstance(combo, QComboBox)
        qtbot.waitUntil(lambda: combo.count() == 2, timeout=5000)
        assert sorted(combo.itemText(i) for i in range(combo.count())) == [OLLAMA_MODEL, "qwen3:8b"]
        assert combo.currentText() == OLLAMA_MODEL
        assert "2 models on ollama" in dialog.models_status.text()
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)


def test_probing_an_engine_that_is_not_there_says_so_in_the_dialog(qtbot, real_desktop, vllm):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    dialog = open_editor(qtbot, d)
    type_into(qtbot, dialog, "base_url", dead)
    probe(qtbot, dialog)

    assert not dialog.failure.isHidden()
    assert dead.removeprefix("http://") in dialog.failure.text()
    assert "Traceback" not in dialog.failure.text()
    assert dialog.table.isHidden()
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)


def test_the_editor_is_usable_from_the_keyboard_alone(qtbot, real_desktop, vllm):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    dialog = open_editor(qtbot, d)
    qtbot.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert dialog.focusWidget() is dialog.field("num_ctx")
    qtbot.keyClick(dialog, Qt.Key.Key_X, Qt.KeyboardModifier.AltModifier)
    assert dialog.focusWidget() is dialog.field("max_context_tokens")
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab)
    assert dialog.focusWidget() is dialog.field("summarizer_model")
    qtbot.keyClick(dialog, Qt.Key.Key_M, Qt.KeyboardModifier.AltModifier)
    combo = dialog.field("model")
    assert dialog.focusWidget() in (combo, combo.lineEdit())
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: d.app.agent_editing.dialog is None)
    assert d.window.focusWidget() is d.window.composer


def test_the_screenshot_script_draws_the_editor_after_a_probe(qtbot, tmp_path):
    path = make_agent_editor_shot(tmp_path)
    image = QImage(str(path))
    assert (image.width(), image.height()) == DIALOG_SIZE
    colours = {image.pixel(x, y) for x in range(0, image.width(), 16) for y in range(0, 720, 16)}
    assert len(colours) > 5


def test_an_api_key_variable_set_in_the_editor_reaches_a_keyed_vllm_and_only_its_name_is_saved(
    qtbot, real_desktop, vllm, monkeypatch
):
    key = "sk-desk-4b1e9f7a"
    monkeypatch.setenv("BRIM_DESK_KEY", key)
    vllm.api_key = key
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    dialog = open_editor(qtbot, d)
    probe(qtbot, dialog)
    assert "check the API key" in dialog.failure.text()

    type_into(qtbot, dialog, "api_key_env", "1 bad")
    assert "name of an environment variable" in dialog.problem_text("api_key_env")
    type_into(qtbot, dialog, "api_key_env", "BRIM_DESK_KEY")
    qtbot.keyClick(dialog, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)
    answered = lambda: dialog.failure.isHidden() and not dialog.table.isHidden()  # noqa: E731
    qtbot.waitUntil(answered, timeout=10000)
    save_and_wait_for_the_new_session(qtbot, d, dialog)

    saved = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    assert 'api_key_env = "BRIM_DESK_KEY"' in saved and key not in saved
    chat(qtbot, d, "hello")
    assert vllm.chat_requests[-1].headers["authorization"] == f"Bearer {key}"


@pytest.mark.skipif(
    not bundled_models.installed(bundled_models.GEMMA3_270M),
    reason="the second bundled model is not installed (make setup installs it)",
)
def test_the_embedded_engine_offers_its_chat_model_not_the_base_one_and_the_choice_is_saved(
    qtbot, real_desktop
):
    d = real_desktop(wait_open=False)  # the bundled model loads in the background
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=120000)
    dialog = open_editor(qtbot, d)
    combo = dialog.field("model")
    assert isinstance(combo, QComboBox)
    qtbot.waitUntil(lambda: combo.count() > 0, timeout=5000)
    names = [combo.itemText(i) for i in range(combo.count())]
    # Gemma 3 270M is installed, but it is a base model: it would carry on the prompt.
    assert names == ["SmolLM2-135M-Instruct.Q4_1"]
    assert combo.currentText() == ""  # blank: the default, SmolLM2
    combo.setCurrentIndex(0)
    with qtbot.waitSignal(d.app.bridge.opened, timeout=120000):
        qtbot.keyClick(dialog.field("num_ctx"), Qt.Key.Key_Return)
    saved = (d.paths.agents_dir / "default.toml").read_text(encoding="utf-8")
    assert 'model = "SmolLM2-135M-Instruct.Q4_1"' in saved
    assert "# The engine that runs the model" in saved  # the template's comments stay
    qtbot.waitUntil(lambda: "SmolLM2-135M-Instruct.Q4_1" in d.window.header.text(), timeout=120000)
