"""An exact counter for the fake engines: their own tokenizer and template.

Brim counts exactly where the engine lends it a tokenizer (the embedded model; llama-server
through /tokenize and /apply-template). For a test that compares the gauge with what the
engine really evaluated, a session on a fake llama-server gets this segment tokenizer: it
counts each message as `smollm2_vocab.render_message` renders it (the fake llama-server's
vocabulary and template, SmolLM2's), and measures the framing and the tool schemas as an
engine's own template would show them, by rendering small probe requests (a system message
and a user message, as Brim's requests begin) with and without what is measured, as
`engine.providers.gguf_tokenizer` does on a real GGUF. It never reads the template's parts
from `smollm2_vocab`: SmolLM2's default system message, for one, is in the framing only of a
request that has no system message of its own, and Brim's always do.

    monkeypatch.setattr("engine.session.chat.counter_for", exact_counter_for)

What is left is the template's own: tokens where the tool schemas written into the system
text meet it. The counter's calibration learns that residual from each answer, as it does on
the real engines.
"""

from __future__ import annotations

from typing import Any

from engine.messages import Message, to_openai
from engine.providers.base import Provider
from engine.tokens import TokenCounter
from tests.helpers import smollm2_vocab

_PROBE = [{"role": "system", "content": "x"}, {"role": "user", "content": "x"}]


def _wrapped(tool: dict[str, Any]) -> dict[str, Any]:
    return tool if "function" in tool else {"type": "function", "function": tool}


class FakeTemplateTokenizer:
    """`SegmentTokenizer` for a fake engine's template. `bos`: the engine is asked to add a
    BOS token to every prompt (llama-server is; SmolLM2's vocabulary adds none). `vocab`:
    the engine's own vocabulary and template (`tokenize`, `render_chat`, `render_message`),
    the fake llama-server's by default; an engine lends the counter of what it counts with."""

    def __init__(self, *, bos: bool = True, vocab: Any = smollm2_vocab) -> None:
        self._bos = bos
        self._vocab = vocab

    def _tokenize(self, text: str, *, add_special: bool = False) -> list[int]:
        tokens: list[int] = self._vocab.tokenize(text, add_special=add_special)
        return tokens

    def _count(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        return len(self._tokenize(self._vocab.render_chat(messages, tools), add_special=self._bos))

    def _segment(self, message: dict[str, Any]) -> int:
        return len(self._tokenize(self._vocab.render_message(message)))

    def count_message(self, message: Message) -> int:
        return self._segment(to_openai(message))

    def count_text(self, text: str) -> int:
        return len(self._tokenize(text))

    def count_tools(self, tools: list[dict[str, Any]]) -> int:
        """What the schemas add to a request that begins as Brim's do."""
        if not tools:
            return 0
        return self._count(_PROBE, [_wrapped(t) for t in tools]) - self._count(_PROBE, None)

    def request_overhead(self, has_tools: bool) -> int:
        """What a request costs beyond its messages' segments (BOS, generation prompt);
        the schemas' share is `count_tools`'."""
        segments = sum(self._segment(m) for m in _PROBE)
        return self._count(_PROBE, None) - segments


def exact_counter_for(provider: Provider, model: str) -> TokenCounter:
    """What `engine.tokens.counter_for` returns for an engine that counts exactly."""
    return TokenCounter(model, tokenizer=FakeTemplateTokenizer())
