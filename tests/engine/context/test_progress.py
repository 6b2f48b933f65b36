from engine.context.progress import extract_run_progress, paths_read
from engine.messages import ToolCall, assistant, tool_result, user

from .histories import Ids, cycle


def test_the_progress_note_lists_files_read_modified_commands_and_the_last_action():
    ids = Ids()
    msgs = [
        user("fix the bug"),
        *cycle(ids, 100, name="read_file", path="src/app.py"),
        *cycle(ids, 100, name="read_file", path="src/app.py"),
        *cycle(ids, 100, name="list_directory", path="src"),
        *cycle(ids, 100, name="edit_file", path="src/app.py"),
        *cycle(ids, 100, name="run_command"),
    ]
    note = extract_run_progress(msgs)
    lines = note.splitlines()
    assert "do not redo it" in lines[0]
    assert "- Files read: src/app.py" in lines
    assert "- Listed or searched: src" in lines
    assert "- Files modified: src/app.py" in lines
    assert any(line.startswith("- Commands run: `pytest -q tests/call_5`") for line in lines)
    assert lines[-1] == "- Most recent action: run_command `pytest -q tests/call_5`"


def test_a_call_that_never_got_a_result_is_not_reported_as_done():
    call = ToolCall(id="x", name="edit_file", arguments='{"path": "a.py"}')
    assert extract_run_progress([assistant("", (call,))]) == ""
    assert "a.py" in extract_run_progress([assistant("", (call,)), tool_result(call, "ok")])


def test_no_tool_calls_means_no_progress_note():
    assert extract_run_progress([user("hi"), assistant("hello")]) == ""


def test_malformed_arguments_from_the_model_do_not_break_the_note():
    call = ToolCall(id="x", name="read_file", arguments="{not json")
    msgs = [assistant("", (call,)), tool_result(call, "...")]
    assert paths_read(msgs) == []
    assert extract_run_progress(msgs).endswith("- Most recent action: read_file")
