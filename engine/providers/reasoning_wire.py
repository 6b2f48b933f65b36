"""A thinking model's reasoning on the wire: the request's reasoning level in each engine's
words, where each engine streams the reasoning, and which earlier reasoning goes back.

Checked in each engine's source (December 2026):
- Ollama, server/routes.go ChatHandler: a model whose capabilities hold "thinking" thinks
  when `think` is left out; `think` takes true/false or "low"/"medium"/"high" (api/types.go
  ThinkValue); `think: true` or a level for a model without the capability is a 400
  "does not support thinking", `think: false` never is (ThinkValue.Bool is false).
- llama-server, tools/server/server-common.cpp oaicompat_chat_params_parse: the request's
  `chat_template_kwargs` are merged into the template's variables and `enable_thinking`
  there (a JSON boolean; a string is refused) switches thinking; the template itself reads
  `reasoning_effort` from those kwargs (gpt-oss), a top-level field is not read.
- vLLM and SGLang: `chat_template_kwargs` (`enable_thinking` for Qwen3) and a top-level
  `reasoning_effort` (OpenAI's field, handed to the template and to gpt-oss's harmony).
"""

from __future__ import annotations

from typing import Any

from engine.messages import Message
from engine.providers.base import ReasoningLevel

EFFORTS = ("low", "medium", "high")


def ollama_think(level: ReasoningLevel | None, thinks: bool | None) -> bool | str | None:
    """`think` of an `/api/chat` body (None: left out, the model's default). A model the
    engine says cannot think is never asked to (Ollama would refuse the whole request);
    "off" is sent to every model, as Ollama takes `think: false` from any."""
    if level is None:
        return None
    if level == "off":
        return False
    if thinks is False:
        return None
    return level if level in EFFORTS else True


def openai_reasoning_fields(
    level: ReasoningLevel | None, *, effort_in_kwargs: bool
) -> dict[str, Any]:
    """The fields of a chat-completions body that set the reasoning level ({} for None).
    `effort_in_kwargs`: the level goes to the template as `reasoning_effort` among the
    `chat_template_kwargs` (llama-server) rather than as a top-level field (vLLM, SGLang)."""
    if level is None:
        return {}
    kwargs: dict[str, Any] = {"enable_thinking": level != "off"}
    out: dict[str, Any] = {"chat_template_kwargs": kwargs}
    if level in EFFORTS:
        if effort_in_kwargs:
            kwargs["reasoning_effort"] = level
        else:
            out["reasoning_effort"] = level
    return out


def reasoning_sent_back(messages: list[Message]) -> list[bool]:
    """For each message, whether its reasoning goes back to the engine: only an assistant
    message with tool calls after the last user message (the tool-calling turn still
    running, whose template may need the reasoning that led to the calls), and only where
    it has some. Every other turn's reasoning stays with Brim."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return [
        i > last_user and m.role == "assistant" and bool(m.tool_calls) and bool(m.reasoning)
        for i, m in enumerate(messages)
    ]


def delta_reasoning(delta: dict[str, Any]) -> str:
    """The reasoning in one streamed `delta` (or a whole `message`): vLLM's `reasoning`
    (since its rename of late 2025), else `reasoning_content` (llama-server, SGLang, older
    vLLM); a server that sends both sends the same text twice. ValueError for one that is
    not text."""
    for key in ("reasoning", "reasoning_content"):
        value = delta.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"a `delta.{key}` that is not text")
        if value:
            return value
    return ""
