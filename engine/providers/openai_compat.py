"""Chat completions as llama-server, vLLM and SGLang all speak them (OpenAI-compatible SSE).

The three differ in what they report about windows and caches, not in how they stream, so
the stream lives here once and the engine modules override only the facts.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from engine.messages import Message, ToolCall, model_messages, to_openai
from engine.providers.base import (
    ChatOptions,
    EngineReport,
    ModelInfo,
    StreamDone,
    StreamItem,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.classify import (
    classify_http,
    classify_payload,
    classify_transport,
    error_fields,
    safe_url,
)
from engine.providers.errors import ModelNotFound, ServerError
from engine.providers.http_base import HttpProvider, as_int
from engine.providers.sse import iter_sse


def new_call_id() -> str:
    """An id for a tool call the engine did not name (results are matched by it)."""
    return "call_" + uuid.uuid4().hex[:24]


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallAssembler:
    """Joins the fragments of streamed tool calls (keyed by `index`) into whole calls."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}

    def add(self, deltas: list[Any]) -> None:
        for position, delta in enumerate(deltas):
            if not isinstance(delta, dict):
                continue
            index = as_int(delta.get("index"))
            key = index if index is not None else len(self._calls) + position
            call = self._calls.setdefault(key, _PartialCall())
            if isinstance(delta.get("id"), str) and delta["id"] and not call.id:
                call.id = delta["id"]
            function = delta.get("function") or {}
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments += arguments
            elif isinstance(arguments, dict):
                call.arguments += json.dumps(arguments, ensure_ascii=False)

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(id=c.id or new_call_id(), name=c.name, arguments=c.arguments or "{}")
            for _, c in sorted(self._calls.items())
        )


def cached_from_usage(usage: dict[str, Any] | None) -> int | None:
    """`usage.prompt_tokens_details.cached_tokens`: None when absent, an explicit 0 stays 0."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict):
        return None
    return as_int(details.get("cached_tokens"))


class OpenAICompatProvider(HttpProvider):
    """Any server with `/v1/models` and streaming `/v1/chat/completions`."""

    chat_path = "/v1/chat/completions"
    owned_by: str | None = None  # the `owned_by` this engine writes on its model cards

    # -- models and windows ---------------------------------------------------------------

    async def _model_cards(self) -> list[dict[str, Any]]:
        listing = await self._get_json("/v1/models")
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            raise self._protocol_error("a /v1/models answer without a `data` list")
        return [card for card in data if isinstance(card, dict) and card.get("id")]

    async def list_models(self) -> list[ModelInfo]:
        cards = await self._model_cards()
        by_id = {card["id"]: card for card in cards}
        return [
            ModelInfo(
                id=str(card["id"]),
                served_window=self._card_window(card, by_id),
                parent=card.get("parent") or None,
                owned_by=card.get("owned_by"),
            )
            for card in cards
        ]

    @staticmethod
    def _card_window(card: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> int | None:
        """`max_model_len` of the card; a LoRA card without one inherits its parent's."""
        window = as_int(card.get("max_model_len"))
        parent = card.get("parent")
        seen = {card.get("id")}
        while window is None and isinstance(parent, str) and parent in by_id and parent not in seen:
            seen.add(parent)
            window = as_int(by_id[parent].get("max_model_len"))
            parent = by_id[parent].get("parent")
        return window

    async def report(self, model: str, num_ctx: int | None = None) -> EngineReport:
        cards = await self._model_cards()
        by_id = {card["id"]: card for card in cards}
        card = by_id.get(model)
        if card is None:
            served = ", ".join(sorted(by_id)) or "nothing"
            if not model:
                raise ModelNotFound(
                    f"no model named for {self.where}: set `model` in the agent file (or pass "
                    f"--model); it serves: {served}"
                )
            raise ModelNotFound(f"{self.where} does not serve {model!r} (it serves: {served})")
        warnings: list[str] = []
        owner = card.get("owned_by")
        if self.owned_by and isinstance(owner, str) and owner and owner != self.owned_by:
            warnings.append(
                f"the server at {safe_url(self.base_url)} calls itself {owner!r}, "
                f"not {self.owned_by!r}: check the agent's provider"
            )
        return EngineReport(
            provider=self.kind,
            model=model,
            served=self._card_window(card, by_id),
            warnings=warnings,
        )

    # -- chat -----------------------------------------------------------------------------

    def request_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": [to_openai(m) for m in model_messages(messages)],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.stop:
            body["stop"] = list(options.stop)
        if options.tools:
            body["tools"] = options.tools
        return body

    def usage_from(self, usage: dict[str, Any] | None, timings: dict[str, Any] | None) -> Usage:
        usage = usage if isinstance(usage, dict) else {}
        return Usage(
            prompt_tokens=as_int(usage.get("prompt_tokens")),
            completion_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=cached_from_usage(usage),
        )

    def _stream_error(self, payload: Any, model: str) -> Exception:
        return classify_payload(
            payload, engine=self.engine_name, url=self.base_url, model=model, status=200
        )

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        body = self.request_body(model, messages, options)
        calls = ToolCallAssembler()
        finish: str | None = None
        usage: dict[str, Any] | None = None
        timings: dict[str, Any] | None = None
        finished = False
        events = 0
        try:
            async with self._http.stream("POST", self.chat_path, json=body) as response:
                if response.status_code >= 400:
                    raise classify_http(
                        response.status_code,
                        await response.aread(),
                        engine=self.engine_name,
                        url=self.base_url,
                        model=model,
                    )
                async for event in iter_sse(response.aiter_lines()):
                    events += 1
                    if event.data.strip() == "[DONE]":
                        finished = True
                        break
                    try:
                        chunk = json.loads(event.data)
                    except ValueError as exc:
                        if event.event == "error":
                            raise self._stream_error(event.data, model) from exc
                        raise self._protocol_error("a stream event that is not JSON") from exc
                    if event.event == "error" or (
                        isinstance(chunk, dict)
                        and ("error" in chunk or chunk.get("object") == "error")
                    ):
                        payload = chunk if error_fields(chunk) else {"error": chunk}
                        raise self._stream_error(payload, model)
                    if not isinstance(chunk, dict):
                        raise self._protocol_error("a stream event that is not a JSON object")
                    if isinstance(chunk.get("usage"), dict):
                        usage = chunk["usage"]
                    if isinstance(chunk.get("timings"), dict):
                        timings = chunk["timings"]
                    for choice in chunk.get("choices") or []:
                        if not isinstance(choice, dict):
                            continue
                        delta = choice.get("delta") or {}
                        text = delta.get("content")
                        if isinstance(text, str) and text:
                            yield TextDelta(text)
                        if isinstance(delta.get("tool_calls"), list):
                            calls.add(delta["tool_calls"])
                        if choice.get("finish_reason"):
                            finish = str(choice["finish_reason"])
        except httpx.HTTPError as exc:
            raise classify_transport(exc, engine=self.engine_name, url=self.base_url) from exc
        if events == 0:
            raise self._protocol_error("an answer to a chat request that is not an event stream")
        if not finished and finish is None:
            raise ServerError(f"{self.where} ended the stream before the answer finished")
        ready = calls.calls()
        if ready:
            yield ToolCallsReady(ready)
        yield StreamDone(self.usage_from(usage, timings), finish)
