"""A thinking model in the fake engines: which answers reason, where the reasoning goes on
the wire, and how the output cap counts it.

A scripted `Reply(reasoning=...)` is what the model reasons before its answer. Each engine
streams it as its source says (engines.md, "Reasoning"):
- Ollama (server/routes.go ChatHandler): only for a model whose `capabilities` hold
  "thinking", which thinks when the request leaves `think` out (it is set true) and not
  with `think: false`; asking a model without the capability to think (`think: true` or a
  level) is a 400 `"<model>" does not support thinking`, before the model is loaded. The
  reasoning streams in `message.thinking`; `eval_count` and `num_predict` cover thinking
  and answer together.
- llama-server and SGLang: `delta.reasoning_content`; vLLM: `delta.reasoning` (since its
  rename). With the template's thinking switched off (`chat_template_kwargs`
  `enable_thinking: false`) the model answers without it. A server started without a
  reasoning parser (llama-server `--reasoning-format none`, vLLM without
  `--reasoning-parser`: `reasoning_parser=False`) leaves `<think>\\n…\\n</think>\\n\\n`
  at the head of the content instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.helpers.fake_http import Reply, within_tokens
from tests.helpers.fake_tokenizer import split_reply

THINKING_VALUES = ("low", "medium", "high", "max")  # api/types.go ThinkValue, as strings


def ollama_asks_to_think(think: Any) -> bool:
    """ThinkValue.Bool: true, or one of the level strings."""
    return think is True or (isinstance(think, str) and think in THINKING_VALUES)


def ollama_refusal(model: str, capabilities: tuple[str, ...], think: Any) -> str | None:
    """The 400 text for a request asking a model without "thinking" to think; None: taken."""
    if "thinking" in capabilities or not ollama_asks_to_think(think):
        return None
    return f'"{model}" does not support thinking'


def ollama_thinks(capabilities: tuple[str, ...], think: Any) -> bool:
    """Whether a model with these capabilities reasons for a request with this `think`."""
    return "thinking" in capabilities and (think is None or ollama_asks_to_think(think))


def openai_thinks(body: dict[str, Any]) -> bool:
    """False where the request switched the template's thinking off."""
    kwargs = body.get("chat_template_kwargs")
    return not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)


def pieces(reply: Reply, *, thinks: bool, parser: bool = True) -> tuple[list[str], list[str]]:
    """(reasoning pieces, answer pieces) of a reply, before any cap; without a parser the
    block leads the content."""
    if not (thinks and reply.reasoning):
        return [], split_reply(reply.text)
    if not parser:
        return [], split_reply(f"<think>\n{reply.reasoning}\n</think>\n\n{reply.text}")
    return split_reply(reply.reasoning), split_reply(reply.text)


def capped(
    thought: list[str],
    answer: list[str],
    limit: int | None,
    count: Callable[[str], int],
    head: Callable[[str, int], str],
) -> tuple[list[str], list[str], bool]:
    """Both under one output cap, reasoning first (the engine counts every token it
    generates); True when the cap cut them."""
    if limit is None or limit < 0:
        return thought, answer, False
    kept_thought = within_tokens(thought, limit, count, head)
    room = limit - sum(count(p) for p in kept_thought)
    kept_answer = within_tokens(answer, max(room, 0), count, head)
    cut = len(kept_thought) < len(thought) or len(kept_answer) < len(answer)
    if len(kept_thought) < len(thought):
        kept_answer = []
    return kept_thought, kept_answer, cut
