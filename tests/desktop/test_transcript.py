"""The transcript: highlighted code once an answer is complete, collapsible tool rows,
notices as rows of their own, and the load progress bar above it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCursor

from engine.context.nudges import iteration_pressure_text
from engine.events import CompactionEvent
from engine.messages import ToolCall, assistant, user
from tests.helpers.fake_provider import InProcessEngine

CODE_ANSWER = "Like this:\n\n```python\nimport os\nprint(os.getcwd())\n```\n"


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _colours_of(window: Any, word: str) -> set[str]:
    """The foreground colours the document paints `word` in."""
    document = window.transcript.document()
    colours: set[str] = set()
    cursor = document.find(word)
    while not cursor.isNull():
        probe = QTextCursor(document)
        probe.setPosition(cursor.selectionStart() + 1)
        colours.add(probe.charFormat().foreground().color().name())
        cursor = document.find(word, cursor)
    return colours


def test_code_is_highlighted_once_the_answer_is_complete_not_while_it_streams(qtbot, open_desktop):
    chunks = [CODE_ANSWER[i : i + 5] for i in range(0, len(CODE_ANSWER), 5)]
    d = open_desktop()
    d.engine.script(deltas=chunks, hold=True)
    _send(qtbot, d.window, "How do I print the folder?")
    qtbot.waitUntil(lambda: "os.getcwd" in d.window.transcript.toPlainText())
    assert "```" in d.window.transcript.toPlainText()  # still plain text while streaming
    assert len(_colours_of(d.window, "import")) == 1
    d.window.cancel_turn()
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    text = d.window.transcript.toPlainText()
    assert "```" not in text and "import os" in text
    keyword = _colours_of(d.window, "import")
    assert keyword and keyword != {QColor("#1d2430").name()}  # pygments coloured it


def _workspace(tmp_path: Any, files: dict[str, str]) -> Any:
    folder = tmp_path / "work"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_tool_calls_are_collapsed_rows_that_open_to_show_arguments_and_result(
    qtbot, open_desktop, tmp_path
):
    d = open_desktop(workspace=_workspace(tmp_path, {"notes.md": "line one\nline two"}))
    d.engine.script("", tool_calls=[ToolCall("c1", "read_file", '{"path": "notes.md"}')])
    d.engine.script("The file has two lines.")
    _send(qtbot, d.window, "Read notes.md")
    qtbot.waitUntil(lambda: "The file has two lines." in d.window.transcript.toPlainText())
    (tool,) = [r for r in d.window.transcript.rows() if r.kind == "tool"]
    assert tool.title == "read_file  path=notes.md"
    # What read_file returned: a header and the numbered lines.
    assert tool.status == "69 chars"
    text = d.window.transcript.toPlainText()
    assert "▸  ⚙ read_file  path=notes.md   → 69 chars" in text
    assert "line two" not in text  # collapsed
    d.window.transcript.toggle(tool.id)
    text = d.window.transcript.toPlainText()
    assert "▾  ⚙ read_file" in text and "line two" in text and '"path": "notes.md"' in text
    d.window.transcript.toggle(tool.id)
    assert "line two" not in d.window.transcript.toPlainText()
    # The order the user saw: their message, the tool row, the answer, the receipt
    # (the receipt follows the answer's last delta, once the turn has ended).
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    kinds = [r.kind for r in d.window.transcript.rows()]
    assert kinds == ["user", "tool", "assistant", "receipt"]


def test_clicking_a_tool_rows_header_toggles_it(qtbot, open_desktop, tmp_path):
    d = open_desktop(workspace=_workspace(tmp_path, {"a.txt": "a"}))
    d.engine.script("", tool_calls=[ToolCall("c1", "list_directory", "{}")])
    _send(qtbot, d.window, "What is here?")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    (tool,) = [r for r in d.window.transcript.rows() if r.kind == "tool"]
    toggled: list[int] = []
    d.window.transcript.toggled.connect(toggled.append)
    d.window.transcript.anchorClicked.emit(f"toggle:{tool.id}")
    assert toggled == [tool.id]
    assert "a.txt" in d.window.transcript.toPlainText()


def test_notices_are_rows_of_their_own_not_chat_bubbles(qtbot, open_desktop):
    # A saved conversation near the end of an 8K window: the next request compacts first.
    # The agent is capped at 2 steps, so the turn's first request also warns of the cap.
    history = []
    for i in range(42):
        history += [user(f"Reading {i}: " + "the figures were steady and on plan " * 20)]
        history += [assistant(f"Noted reading {i}.")]
    d = open_desktop(history=history, max_iterations=2)
    compactions: list[CompactionEvent] = []
    d.app.bridge.event.connect(
        lambda e: compactions.append(e) if isinstance(e, CompactionEvent) else None
    )
    _send(qtbot, d.window, "Go on")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    (done,) = [e for e in compactions if e.phase == "finished"]
    before, after = done.messages_before, done.messages_after
    assert before > after > 0
    warning = iteration_pressure_text(0.5, 1, 2)
    notices = [r for r in d.window.transcript.rows() if r.kind == "notice"]
    notices = notices[-2:]  # the saved conversation has none; this turn said these
    assert [(n.level, n.marker) for n in notices] == [("warning", ""), ("info", "compaction")]
    assert notices[0].text == warning
    assert notices[1].text.startswith(f"auto-compacted {before} -> {after} messages (ctx ")
    text = d.window.transcript.toPlainText()
    assert f"⚠  {warning}" in text
    assert f"⇊  auto-compacted {before} -> {after} messages" in text
    why = "the prompt neared the context window"
    # The second line counts what the checkpoint replaced (as Show / Restore lists them).
    assert f"compacted {done.messages_replaced} messages into a summary: {why}" in text
    assert 0 < done.messages_replaced < before
    assert d.window.rail.timeline.marker_kinds() == ["compaction"]


def test_the_model_loading_shows_a_progress_bar_until_ready(qtbot, open_desktop):
    # A model Brim loads in its own process (the embedded engine), telling how far it got.
    engine = InProcessEngine(
        loads_model_in_process=True, load_progress=[0.1, 0.5, 0.9, 1.0], load_s=0.6
    )
    d = open_desktop(engine=engine, wait_open=False)
    seen: list[int] = []
    d.window.load_progress.valueChanged.connect(seen.append)
    qtbot.waitUntil(lambda: d.window.load_progress.isVisible())
    assert d.window.header.state() == "loading model"
    # All weights read: the bar says the engine is still preparing, never a stuck 100%.
    qtbot.waitUntil(lambda: "preparing" in d.window.load_progress.format(), timeout=5000)
    assert d.window.load_progress.maximum() == 0  # busy, not a percentage
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=5000)
    assert not d.window.load_progress.isVisible()
    assert seen[:3] == [10, 50, 90] and 100 not in seen


def test_a_long_code_line_wraps_in_its_block_instead_of_scrolling_the_transcript(qtbot):
    from desktop.widgets.transcript import TranscriptView
    from engine.messages import assistant, user

    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    line = "result = compute(" + ", ".join(f"argument_{i}" for i in range(40)) + ")"
    view.set_history([user("Show me"), assistant(f"Here:\n\n```python\n{line}\n```\n")])
    qtbot.wait(50)
    assert view.horizontalScrollBar().maximum() == 0
    assert "argument_39" in view.toPlainText()
