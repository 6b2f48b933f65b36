from engine.context.history import group_units, tool_pairing_problems
from engine.messages import ToolCall, assistant, system, tool_result, user

A = ToolCall(id="a", name="read_file", arguments='{"path": "x.py"}')
B = ToolCall(id="b", name="read_file", arguments='{"path": "y.py"}')


def test_a_tool_call_without_its_result_is_reported():
    msgs = [system("s"), user("u"), assistant("", (A, B)), tool_result(A, "x")]
    assert tool_pairing_problems(msgs) == ["message 2: tool call b has no result"]


def test_a_result_without_its_call_is_reported():
    msgs = [system("s"), user("u"), tool_result(A, "x")]
    assert tool_pairing_problems(msgs) == ["message 2: tool result a has no call"]


def test_a_result_separated_from_its_call_is_reported():
    msgs = [system("s"), assistant("", (A,)), user("u"), tool_result(A, "x")]
    assert len(tool_pairing_problems(msgs)) == 2


def test_a_sound_history_has_no_problems_and_groups_calls_with_their_results():
    msgs = [system("s"), user("u"), assistant("", (A, B)), tool_result(A, "x"), tool_result(B, "y")]
    assert tool_pairing_problems(msgs) == []
    assert group_units(msgs) == [(0,), (1,), (2, 3, 4)]
