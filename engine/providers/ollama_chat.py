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
    ReasoningDelta,
    StreamDone,
    StreamItem,
    ToolCallsReady,
    Usage,
)
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.errors import ServerError
from engine.providers.http_base import as_count, as_int
from engine.providers.openai_compat import new_call_id
from engine.providers.reasoning_wire import ollama_think, reasoning_sent_back
from engine.providers.think_split import ThinkSplitter
from engine.providers.wire import CallBytes


class ChatAnswer(ollama.ChatResponse):
    """One line of `/api/chat`'s answer: the client's model, with the field it does not
    know yet (its models drop unknown fields). `prompt_eval_cached_count`: of
    `prompt_eval_count`, the tokens the prompt cache served (Ollama 0.33.3 on; engines.md)."""

    prompt_eval_cached_count: Any = None  # read by `cached_count`, leniently


def to_ollama(message: Message, *, thinking: bool = False) -> dict[str, Any]:
    """Ollama's message shape: tool-call arguments as an object, results named by tool;
    `thinking`: the message's reasoning goes with it (api.Message.Thinking, which the
    templates render for the tool-calling turn still running)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if thinking and message.reasoning:
        out["thinking"] = message.reasoning
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
    thinks: bool | None = None,
) -> dict[str, Any]:
    """The one `/api/chat` body Brim sends. `truncate` and `shift` go at the top level, not
    among the options (Ollama's ChatRequest), and only to a server that takes them
    (`refuses_cuts`). `think` as the request's reasoning level asks, for a model that
    `thinks` (reasoning_wire.py); the running tool-calling turn's reasoning goes back."""
    shown = model_messages(messages)
    back = reasoning_sent_back(shown)
    body: dict[str, Any] = {
        "model": model,
        "messages": [to_ollama(m, thinking=b) for m, b in zip(shown, back, strict=True)],
        "stream": True,
    }
    think = ollama_think(options.reasoning, thinks)
    if think is not None:
        body["think"] = think
    if options.tools:
        body["tools"] = list(options.tools)
    engine_options = request_options(options, num_ctx)
    if engine_options:
        body["options"] = engine_options
    if refuses_cuts:
        body["truncate"] = False
        body["shift"] = False
    return body


def cached_count(part: ollama.ChatResponse, prompt: int | None) -> int | None:
    """`prompt_eval_cached_count` of the last line, within 0..`prompt_eval_count`; None
        where the server does not report it (before 0.33.3), or where the prompt's size is not
        known (0.30.0 leaves the cached part out of `prompt_eval_count`). A figure out of range
    is clamped: it is a detail of the receipt, not worth failing the answer for."""
    cached = as_int(getattr(part, "prompt_eval_cached_count", None))
    if cached is None or prompt is None:
        return None
    return min(max(cached, 0), prompt)


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
        self._thinking = StreamText()
        self._split = ThinkSplitter()  # a model whose `<think>` Ollama does not parse
        self._usage = Usage()

    def feed(self, part: ollama.ChatResponse) -> list[StreamItem]:
        """What one line of the stream adds; after the last line `done` is set."""
        out: list[StreamItem] = []
        message = part.message
        if message.thinking:  # server/routes.go ChatHandler: the parser's thinking
            thought = self._thinking.feed(message.thinking)
            if thought:
                out.append(ReasoningDelta(thought))
        if message.content:
            out.extend(self._split.feed(self._text.feed(message.content)))
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
                cached_tokens=cached_count(part, prompt if self.whole_prompt else None),
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
        thought = self._thinking.flush()
        if thought:
            out.append(ReasoningDelta(thought))
        out.extend(self._split.feed(self._text.flush()))
        out.extend(self._split.flush())
        finish = clean(done.done_reason) if isinstance(done.done_reason, str) else None
        if self._calls:
            out.append(ToolCallsReady(tuple(self._calls)))
            if finish in (None, "stop"):
                finish = "tool_calls"
        out.append(StreamDone(self._usage, finish))
        return out
