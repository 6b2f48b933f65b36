"""The fake engines' tokenizer and chat template: deterministic and easy to count by hand.

A token is a run of non-space characters. A chat renders as one line per message,
`<|role|> content <|end|>` (a message costs 2 tokens plus its words), tool calls add
`<|call|> name arguments`, a tools block adds its JSON's words, and the prompt ends with
`<|assistant|>` (1 token). llama-server also adds a BOS token when asked to (`add_special`).
Every fake counts the prompt through these functions, so `count_prompt` on llama-server and
vLLM must equal the `prompt_tokens` that the same fake reports for the same request.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

BOS_ID = 1
_PIECE = re.compile(r"\s*\S+")


def tokenize(text: str, *, add_special: bool = False) -> list[int]:
    ids = [100 + zlib.crc32(word.encode("utf-8")) % 50_000 for word in text.split()]
    return [BOS_ID, *ids] if add_special else ids


def count_text(text: str) -> int:
    return len(text.split())


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, sort_keys=True)


def render_message(message: dict[str, Any]) -> str:
    body = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        body += f" <|call|> {function.get('name', '')} {_arguments_text(function.get('arguments'))}"
    return f"<|{message.get('role', 'user')}|> {body} <|end|>"


def render_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    lines = []
    if tools:
        lines.append(f"<|tools|> {json.dumps(tools, sort_keys=True)} <|end|>")
    lines.extend(render_message(m) for m in messages)
    if add_generation_prompt:
        lines.append("<|assistant|>")
    return "\n".join(lines)


def count_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_special: bool = False,
) -> int:
    return len(tokenize(render_chat(messages, tools), add_special=add_special))


def split_reply(text: str) -> list[str]:
    """The pieces a fake streams, one token each (leading whitespace kept with each word)."""
    return _PIECE.findall(text)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
