"""One `/api/chat` exchange with Ollama: the body Brim sends, and the streamed answer read
back as Brim's stream items.

The body is Brim's own (the official client's `chat()` has no `truncate` or `shift`); the
answer's lines are the client's `ChatResponse` models. The part of the options that decides
how the model is loaded (`num_ctx`) is the provider's, the same on every request.
"""

from __future__ import annotations

import json
from typing import Any

import ollama

from engine.messages import Message, ToolCall, model_messages
from engine.providers.base import (
    ChatOptions,
    StreamDone,
    StreamItem,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.errors import ServerError
from engine.providers.http_base import as_count, as_int
from engine.providers.openai_compat import new_call_id
from engine.providers.wire import CallBytes


def to_ollama(message: Message) -> dict[str, Any]:
    """Ollama's message shape: tool-call arguments as an object, results named by tool."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.parsed_arguments()}}
            for c in message.tool_calls
        ]
    if message.role == "tool" and message.name:
        out["tool_name"] = message.name
    return out


def request_options(options: ChatOptions, num_ctx: int | None) -> dict[str, Any]:
    """`options` of one `/api/chat` request. The part that decides how the model is loaded
    (`num_ctx`) is the provider's, the same on every request, whoever asks (the agent,
    the summarizer, memory): a request with another runner option reloads the model.
    What a request may set for itself (output cap, sampling, stops) only samples: the
    sampler settings `options` carries are sent, the rest left to the Modelfile's PARAMETER
    lines or Ollama's defaults (the provider's plan, engine/providers/sampling_source.py)."""
    out: dict[str, Any] = {}
    if num_ctx is not None:
        out["num_ctx"] = num_ctx
    if options.max_tokens is not None:
        out["num_predict"] = options.max_tokens
    out.update(options.sampled().fields("ollama"))
    if options.stop:
        out["stop"] = list(options.stop)
    return out


def chat_body(
    model: str,
    messages: list[Message],
    options: ChatOptions,
    *,
    num_ctx: int | None,
    refuses_cuts: bool,
) -> dict[str, Any]:
    """The one `/api/chat` body Brim sends. `truncate` and `shift` go at the top level, not
    among the options (Ollama's ChatRequest), and only to a server that takes them
    (`refuses_cuts`)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [to_ollama(m) for m in model_messages(messages)],
        "stream": True,
    }
    if options.tools:
        body["tools"] = list(options.tools)
    engine_options = request_options(options, num_ctx)
    if engine_options:
        body["options"] = engine_options
    if refuses_cuts:
        body["truncate"] = False
        body["shift"] = False
    return body


def _ns_to_s(value: Any) -> float | None:
    ns = as_int(value)
    return ns / 1e9 if ns is not None and ns >= 0 else None


class ChatReader:
    """One streamed answer, line by line: its text (cleaned as it comes), its tool calls,
    and the usage of its last line. `whole_prompt`: the server's `prompt_eval_count` is the
    prompt's size (on 0.30.0 alone it leaves out what the prompt cache served: it is then
    not reported, as every follow-up would look cut)."""

    def __init__(self, *, whole_prompt: bool) -> None:
        self.whole_prompt = whole_prompt
        self.done: ollama.ChatResponse | None = None
        self._calls: list[ToolCall] = []
        self._taken = CallBytes()
        self._text = StreamText()
        self._usage = Usage()

    def feed(self, part: ollama.ChatResponse) -> list[StreamItem]:
        """What one line of the stream adds; after the last line `done` is set."""
        out: list[StreamItem] = []
        message = part.message
        if message.content:
            piece = self._text.feed(message.content)
            if piece:
                out.append(TextDelta(piece))
        for call in message.tool_calls or ():
            arguments = call.function.arguments
            self._taken.add(call.function.name, str(arguments))
            self._calls.append(
                ToolCall(
                    id=new_call_id(),
                    name=clean(call.function.name),
                    arguments=clean_arguments(
                        arguments
                        if isinstance(arguments, str)
                        else json.dumps(dict(arguments or {}), ensure_ascii=False)
                    ),
                )
            )
        if part.done:
            self.done = part
            prompt = as_count(part.prompt_eval_count, "prompt_eval_count")
            self._usage = Usage(
                prompt_tokens=prompt if self.whole_prompt else None,
                completion_tokens=as_count(part.eval_count, "eval_count"),
                cached_tokens=None,  # Ollama does not report prompt-cache reuse
                prompt_eval_s=_ns_to_s(part.prompt_eval_duration),
                eval_s=_ns_to_s(part.eval_duration),
                load_s=_ns_to_s(part.load_duration),
            )
        return out

    def finish(self, where: str) -> list[StreamItem]:
        """The answer's end once the stream closed: the text held back, the tool calls, and
        the usage; a stream that ended before its last line is the engine's fault."""
        done = self.done
        if done is None:
            raise ServerError(f"{where} ended the stream before the answer finished")
        out: list[StreamItem] = []
        tail = self._text.flush()
        if tail:
            out.append(TextDelta(tail))
        finish = clean(done.done_reason) if isinstance(done.done_reason, str) else None
        if self._calls:
            out.append(ToolCallsReady(tuple(self._calls)))
            if finish in (None, "stop"):
                finish = "tool_calls"
        out.append(StreamDone(self._usage, finish))
        return out
