"""The request's reasoning level in each engine's words, and which earlier reasoning goes
back: only that of the tool-calling turn still running, never a finished turn's."""

from __future__ import annotations

import pytest

from engine.messages import ToolCall, assistant, system, to_openai, tool_result, user
from engine.providers.reasoning_wire import (
    delta_reasoning,
    ollama_think,
    openai_reasoning_fields,
    reasoning_sent_back,
)

CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')


def test_ollama_think_follows_the_level_and_never_asks_a_model_that_cannot():
    assert ollama_think(None, True) is None  # left to Ollama: a thinking model thinks
    assert ollama_think("off", True) is False
    assert ollama_think("off", False) is False  # Ollama takes think:false from any model
    assert ollama_think("on", True) is True
    assert ollama_think("high", None) == "high"
    assert ollama_think("on", False) is None
    assert ollama_think("low", False) is None


def test_servers_get_enable_thinking_and_the_effort_where_their_template_reads_it():
    assert openai_reasoning_fields(None, effort_in_kwargs=True) == {}
    assert openai_reasoning_fields("off", effort_in_kwargs=False) == {
        "chat_template_kwargs": {"enable_thinking": False}
    }
    assert openai_reasoning_fields("medium", effort_in_kwargs=True) == {
        "chat_template_kwargs": {"enable_thinking": True, "reasoning_effort": "medium"}
    }
    assert openai_reasoning_fields("high", effort_in_kwargs=False) == {
        "chat_template_kwargs": {"enable_thinking": True},
        "reasoning_effort": "high",
    }


def test_only_the_running_tool_turns_reasoning_goes_back():
    messages = [
        system("s"),
        user("first"),
        assistant("", (CALL,), reasoning="old turn's plan"),  # a finished turn's call
        tool_result(CALL, "x"),
        assistant("done", reasoning="old answer's thought"),
        user("second"),
        assistant("", (CALL,), reasoning="this turn's plan"),
        tool_result(CALL, "y"),
        assistant("no calls", reasoning="not a call"),
    ]
    assert reasoning_sent_back(messages) == [False] * 6 + [True, False, False]


def test_a_call_without_reasoning_sends_none_back():
    assert reasoning_sent_back([user("q"), assistant("", (CALL,))]) == [False, False]


def test_the_openai_wire_form_of_a_message_never_carries_its_reasoning():
    wire = to_openai(assistant("Paris.", reasoning="The capital of France is Paris."))
    assert wire["content"] == "Paris."
    assert "capital" not in str(wire)


def test_reasoning_is_read_under_either_name_and_a_wrong_type_is_refused():
    assert delta_reasoning({"reasoning": "a"}) == "a"
    assert delta_reasoning({"reasoning_content": "b"}) == "b"
    assert delta_reasoning({"reasoning": "c", "reasoning_content": "c"}) == "c"
    assert delta_reasoning({"reasoning": None, "content": "x"}) == ""
    with pytest.raises(ValueError, match="reasoning_content"):
        delta_reasoning({"reasoning_content": 5})
