"""An exact counter for the fake OpenAI-compatible engines: their own tokenizer and template.

Brim counts exactly where the engine lends it a tokenizer (the embedded model; llama-server
through /tokenize and /apply-template). For a test that compares the gauge with what the
engine really evaluated, a session on a fake llama-server gets this segment tokenizer: it
counts each message as `fake_tokenizer.render_chat` renders it, so Brim's count of a request
is the fake's `prompt_tokens` for it, to the token.

    monkeypatch.setattr("engine.session.chat.counter_for", exact_counter_for)
"""

from __future__ import annotations

import json
from typing import Any

from engine.messages import Message, to_openai
from engine.providers.base import Provider
from engine.tokens import TokenCounter
from tests.helpers.fake_tokenizer import render_chat, render_message, tokenize


def _wrapped(tool: dict[str, Any]) -> dict[str, Any]:
    return tool if "function" in tool else {"type": "function", "function": tool}


class FakeTemplateTokenizer:
    """`SegmentTokenizer` for the fakes' template: `<|role|> content <|end|>` per message,
    one tools line, BOS and the generation prompt around them."""

    def count_message(self, message: Message) -> int:
        return len(tokenize(render_message(to_openai(message))))

    def count_text(self, text: str) -> int:
        return len(tokenize(text))

    def count_tools(self, tools: list[dict[str, Any]]) -> int:
        return len(tokenize(json.dumps([_wrapped(t) for t in tools], sort_keys=True)))

    def request_overhead(self, has_tools: bool) -> int:
        framing = len(tokenize(render_chat([]), add_special=True))  # BOS, <|assistant|>
        if not has_tools:
            return framing
        probe = [{"x": 1}]  # the tools line's own tags: its rendering less the JSON
        tagged = len(tokenize(render_chat([], probe), add_special=True))
        return tagged - len(tokenize(json.dumps(probe, sort_keys=True)))


def exact_counter_for(provider: Provider, model: str) -> TokenCounter:
    """What `engine.tokens.counter_for` returns for an engine that counts exactly."""
    return TokenCounter(model, tokenizer=FakeTemplateTokenizer())
