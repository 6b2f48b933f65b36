"""Brim's own requests beside the agent's (the checkpoint's summarizer, memory's extraction)
ask a thinking model not to think, and where an engine streams reasoning anyway, what they
check and keep is the answer's text alone (issue 49)."""

from __future__ import annotations

import asyncio

from engine.config import AgentConfig
from engine.context import SummaryRequest
from engine.memory.requests import provider_complete
from engine.messages import user
from engine.session.engine_calls import summarize
from tests.helpers.thinking_engine import ThinkingEngine

AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model", reasoning="high")
THOUGHT = ["I am the summarizer, ", "thinking about the checkpoint."]


def test_the_summarizer_asks_for_no_reasoning_and_keeps_only_the_text():
    engine = ThinkingEngine(window=4096)
    engine.think(THOUGHT)
    engine.script("## Goal\n- Plan the garden.\n")
    request = SummaryRequest(messages=[user("Summarize.")], max_tokens=256)
    result = asyncio.run(summarize(engine, AGENT, request, lambda _m, _d: None))
    assert engine.options[0].reasoning == "off"
    assert result.text.strip() == "## Goal\n- Plan the garden."
    assert "thinking about the checkpoint" not in result.text


def test_memorys_requests_ask_for_no_reasoning_and_keep_only_the_text():
    engine = ThinkingEngine(window=4096)
    engine.think(THOUGHT)
    engine.script('{"facts": []}')
    complete = provider_complete(engine, "fake-model")
    done = asyncio.run(complete([user("What should be remembered?")], [], 128))
    assert engine.options[0].reasoning == "off"
    assert done.text == '{"facts": []}'
