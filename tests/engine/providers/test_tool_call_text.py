"""Tool calls a local model writes as text are pulled out of the text it streams."""

import json

from engine.providers.tool_call_text import ToolCallText, parse_tool_call


def feed_all(pieces: list[str]) -> tuple[str, ToolCallText]:
    calls = ToolCallText()
    shown = "".join(calls.feed(p) for p in pieces) + calls.finish()
    return shown, calls


def test_plain_text_streams_through_unchanged():
    shown, calls = feed_all(["Hello", ", wor", "ld <b>ok</b>"])
    assert shown == "Hello, world <b>ok</b>"
    assert calls.calls == []


def test_a_call_split_across_pieces_is_held_back_and_parsed():
    block = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'
    pieces = ["Let me look. ", *[block[i : i + 3] for i in range(0, len(block), 3)], " Done"]
    shown, calls = feed_all(pieces)
    assert shown == "Let me look.  Done"
    assert [(n, json.loads(a)) for n, a in calls.calls] == [("read_file", {"path": "a.txt"})]


def test_text_that_only_looks_like_the_start_of_a_call_is_shown_in_the_end():
    calls = ToolCallText()
    assert calls.feed("a <tool_") == "a "
    assert calls.feed("box>") == "<tool_box>"


def test_a_block_that_is_not_a_call_stays_text():
    shown, calls = feed_all(["<tool_call>not json</tool_call>!"])
    assert shown == "<tool_call>not json</tool_call>!"
    assert calls.calls == []


def test_an_unclosed_block_with_a_complete_call_still_counts_as_a_call():
    shown, calls = feed_all(['<tool_call>{"name": "ls", "arguments": {}}'])
    assert shown == ""
    assert calls.calls == [("ls", "{}")]


def test_arguments_given_as_json_text_are_kept_as_written():
    assert parse_tool_call('{"name": "f", "arguments": "{\\"x\\": 1}"}') == ("f", '{"x": 1}')
    assert parse_tool_call('["f"]') is None
