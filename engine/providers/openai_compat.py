"""Chat completions as llama-server, vLLM and SGLang all speak them (OpenAI-compatible SSE).

The three differ in what they report about windows and caches, not in how they stream, so
the stream lives here once and the engine modules override only the facts.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import httpx

from engine.messages import Message, ToolCall, model_messages, to_openai
from engine.providers.base import (
    NOTICE_OLLAMA_OPENAI_ENDPOINT,
    ChatOptions,
    EngineNotice,
    EngineReport,
    ModelInfo,
    ReasoningDelta,
    StreamDone,
    StreamItem,
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
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.errors import ModelNotFound, ProviderError, ServerError
from engine.providers.http_base import HttpProvider, as_count, as_int, as_window
from engine.providers.model_sampling import generation_config
from engine.providers.ollama_answers import runs_here
from engine.providers.ollama_version import parse_version
from engine.providers.reasoning_wire import (
    delta_reasoning,
    openai_reasoning_fields,
    reasoning_sent_back,
)
from engine.providers.sampling import Dialect
from engine.providers.sampling_source import ModelSampling
from engine.providers.served_names import ServedNames, renamed_notice
from engine.providers.sse import SseEvent, iter_sse
from engine.providers.think_split import ThinkSplitter
from engine.providers.wire import CallBytes, WireError

log = logging.getLogger(__name__)


def new_call_id() -> str:
    """An id for a tool call the engine did not name (results are matched by it)."""
    return "call_" + uuid.uuid4().hex[:24]


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)  # fragments, joined once at the end


class ToolCallAssembler:
    """Joins the fragments of streamed tool calls (keyed by `index`) into whole calls.

    A fragment of a shape no engine sends raises ValueError saying which; the text of the
    finished calls goes through `clean` (a surrogate pair split across fragments is joined
    there, as the fragments are joined before it)."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._taken = CallBytes()  # an engine that streams fragments for ever stops here

    def add(self, deltas: list[Any]) -> None:
        for position, delta in enumerate(deltas):
            if not isinstance(delta, dict):
                raise ValueError("a tool call that is not a JSON object")
            index = as_int(delta.get("index"))
            key = index if index is not None else len(self._calls) + position
            call = self._calls.setdefault(key, _PartialCall())
            call_id = delta.get("id")
            if call_id is not None and not isinstance(call_id, str):
                raise ValueError("a tool call whose `id` is not text")
            if call_id and not call.id:
                call.id = call_id
            function = delta.get("function")
            if function is None:
                continue
            if not isinstance(function, dict):
                raise ValueError("a tool call whose `function` is not an object")
            name = function.get("name")
            if name is not None and not isinstance(name, str):
                raise ValueError("a tool call whose `function.name` is not text")
            if name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            elif arguments is not None and not isinstance(arguments, str):
                raise ValueError(
                    "a tool call whose `function.arguments` is neither text nor an object"
                )
            self._taken.add(name, arguments)
            if arguments:
                call.arguments.append(arguments)

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(
                id=clean(c.id) or new_call_id(),
                name=clean(c.name),
                arguments=clean_arguments("".join(c.arguments)) if c.arguments else "{}",
            )
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


def reasoning_from_usage(usage: dict[str, Any] | None) -> int | None:
    """`usage.completion_tokens_details.reasoning_tokens` (OpenAI's field, which vLLM fills
    where it counts them): None when absent."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("completion_tokens_details")
    if not isinstance(details, dict):
        return None
    return as_int(details.get("reasoning_tokens"))


_USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
_TIMING_COUNTS = ("prompt_n", "cache_n", "predicted_n")
_TIMING_MS = ("prompt_ms", "predicted_ms")


def check_usage(usage: Any) -> dict[str, Any] | None:
    """`usage` as the context ladder may read it: every count a whole number in range.
    None for a chunk without usage (null or absent); ValueError for any other shape."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise ValueError("a `usage` that is not a JSON object")
    for key in _USAGE_COUNTS:
        as_count(usage.get(key), f"usage.{key}")
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        as_count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens")
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict):
        as_count(
            details.get("reasoning_tokens"), "usage.completion_tokens_details.reasoning_tokens"
        )
    return usage


def check_timings(timings: Any) -> dict[str, Any] | None:
    """llama-server's `timings`: token counts in range, durations finite and not negative."""
    if timings is None:
        return None
    if not isinstance(timings, dict):
        raise ValueError("`timings` that are not a JSON object")
    for key in _TIMING_COUNTS:
        as_count(timings.get(key), f"timings.{key}")
    for key in _TIMING_MS:
        value = timings.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"a duration that is not a number (timings.{key})")
        if not (math.isfinite(value) and 0 <= value < 1e15):
            raise ValueError(f"a duration that is not one (timings.{key}: {value!r})")
    return timings


# What reading one event can raise on a shape nobody expected, besides the checks' own
# ValueErrors: these become a protocol_error, never a traceback.
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, OverflowError, RecursionError)


class ChunkReader:
    """Reads one chat stream's events: the text (through the stream's `StreamText`, then
    the `<think>` splitter for a server that leaves the block in the content), the
    reasoning the server streams apart, the tool-call fragments, the finish reason and the
    usage. Every shape it does not expect raises ValueError naming it;
    `OpenAICompatProvider` turns that into a protocol_error."""

    def __init__(self) -> None:
        self.text = StreamText()
        self.reasoning = StreamText()
        self.split = ThinkSplitter()
        self.calls = ToolCallAssembler()
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None

    def read(self, chunk: dict[str, Any]) -> list[StreamItem]:
        """The reasoning and text this chunk adds (possibly nothing)."""
        usage = check_usage(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        timings = check_timings(chunk.get("timings"))
        if timings is not None:
            self.timings = timings
        choices = chunk.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise ValueError("`choices` that are not a list")
        out: list[StreamItem] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise ValueError("a choice that is not a JSON object")
            delta = choice.get("delta")
            if delta is None:
                delta = {}
            if not isinstance(delta, dict):
                raise ValueError("a `delta` that is not a JSON object")
            # llama-server's and SGLang's `reasoning_content`, vLLM's `reasoning`
            # (reasoning_wire.py): apart from the content, never in it.
            thought = self.reasoning.feed(delta_reasoning(delta))
            if thought:
                out.append(ReasoningDelta(thought))
            content = delta.get("content")
            if content is not None and not isinstance(content, str):
                raise ValueError("a `delta.content` that is not text")
            if content:
                out.extend(self.split.feed(self.text.feed(content)))
            tool_calls = delta.get("tool_calls")
            if tool_calls is not None:
                if not isinstance(tool_calls, list):
                    raise ValueError("`delta.tool_calls` that are not a list")
                self.calls.add(tool_calls)
            finish = choice.get("finish_reason")
            if finish is not None and not isinstance(finish, str):
                raise ValueError("a `finish_reason` that is not text")
            if finish:
                self.finish = clean(finish)
        return out

    def flush(self) -> list[StreamItem]:
        """What the decoders still hold once the stream ended."""
        out: list[StreamItem] = []
        thought = self.reasoning.flush()
        if thought:
            out.append(ReasoningDelta(thought))
        out.extend(self.split.feed(self.text.flush()))
        out.extend(self.split.flush())
        return out


class OpenAICompatProvider(HttpProvider):
    """Any server with `/v1/models` and streaming `/v1/chat/completions`."""

    chat_path = "/v1/chat/completions"
    owned_by: str | None = None  # the `owned_by` this engine writes on its model cards
    # The names its chat body gives the sampler settings (engine/providers/sampling.py):
    # vLLM's and SGLang's `repetition_penalty`, top_k -1 for none.
    sampling_dialect: Dialect = "openai"
    # Where the reasoning level's effort goes (reasoning_wire.py): llama-server's template
    # reads it from `chat_template_kwargs`, vLLM and SGLang take the top-level field.
    effort_in_kwargs = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The agent's model name to the id this server serves it under (served_names.py).
        self.served_names = ServedNames()

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
        window = as_window(card.get("max_model_len"))
        parent = card.get("parent")
        seen = {card.get("id")}
        while window is None and isinstance(parent, str) and parent in by_id and parent not in seen:
            seen.add(parent)
            window = as_window(by_id[parent].get("max_model_len"))
            parent = by_id[parent].get("parent")
        return window

    async def ollama_behind(self) -> EngineNotice | None:
        """A notice when the server at this URL is Ollama, reached through its OpenAI-compatible
        `/v1`: there a request carries no num_ctx (the model runs at Ollama's own default
        window) and no `truncate`, so an over-long prompt is cut silently. Ollama answers
        `/api/version` on the same host; llama-server, vLLM and SGLang do not."""
        try:
            body = await self._get_json("/api/version")
        except ProviderError:
            return None
        text = body.get("version") if isinstance(body, dict) else None
        if not isinstance(text, str) or (parse_version(text) is None and text != "0.0.0"):
            return None
        shown = clean(text)[:40]
        return EngineNotice(
            NOTICE_OLLAMA_OPENAI_ENDPOINT,
            f"The {self.kind} provider at {safe_url(self.base_url)} is talking to Ollama "
            f"{shown} through its OpenAI-compatible /v1 endpoint, which ignores num_ctx (the "
            "model runs at Ollama's own default window) and cuts an over-long prompt "
            'silently. Set provider = "ollama" in the agent: Brim then sends the window with '
            "every request and has Ollama refuse a prompt that does not fit.",
            {"engine": "ollama", "version": shown, "provider": self.kind},
        )

    async def report(self, model: str) -> EngineReport:
        cards = await self._model_cards()
        by_id = {card["id"]: card for card in cards}
        card = by_id.get(self.served_names.id_for(model))
        notices: list[EngineNotice] = []
        if card is not None and card["id"] == model:
            self.served_names.named(model)
        if card is None:
            card = self.served_names.follow(model, cards)
            if card is not None:
                notices.append(renamed_notice(self.where, model, str(card["id"])))
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
        behind = await self.ollama_behind()
        if (folder := self._folder_sampling(card)) is not None:
            self.model_sampling[model] = folder
        else:
            self.model_sampling.pop(model, None)
        return EngineReport(
            provider=self.kind,
            model=str(card["id"]),
            served=self._card_window(card, by_id),
            warnings=warnings,
            notices=[*notices, *([behind] if behind is not None else [])],
        )

    def _folder_sampling(self, card: dict[str, Any]) -> ModelSampling | None:
        """What the served model folder's generation_config.json names, which vLLM and SGLang
        apply to what a request leaves out. The card's `root` is the server's `--model`: a
        folder Brim can read only when the server runs here and it is a path (not a Hub id);
        otherwise None (not known: the model may name its own, and is left to the server)."""
        root = card.get("root")
        if not isinstance(root, str) or not root or not runs_here(self.base_url):
            return None
        named = generation_config(root)
        return ModelSampling(named=named) if named is not None else None

    # -- chat -----------------------------------------------------------------------------

    def request_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_names.id_for(model),
            "messages": self.wire_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        body.update(self.sampling_plan(model, options.sampled()).send.fields(self.sampling_dialect))
        if options.stop:
            body["stop"] = list(options.stop)
        if options.tools:
            body["tools"] = options.tools
        body.update(
            openai_reasoning_fields(options.reasoning, effort_in_kwargs=self.effort_in_kwargs)
        )
        return body

    def reasoning_key(self) -> str | None:
        """The field an assistant message's reasoning goes back in, where this server's
        template renders it (llama-server's `supports_preserve_reasoning`); None: never sent
        back. vLLM and SGLang: not sent (no template of theirs is known to need it)."""
        return None

    def wire_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The messages as this server takes them: no reasoning, but that of the tool-calling
        turn still running where the template renders it (reasoning_wire.py)."""
        shown = model_messages(messages)
        key = self.reasoning_key()
        back = reasoning_sent_back(shown) if key else [False] * len(shown)
        return [
            {**to_openai(m), key: m.reasoning} if key and sent else to_openai(m)
            for m, sent in zip(shown, back, strict=True)
        ]

    def usage_from(self, usage: dict[str, Any] | None, timings: dict[str, Any] | None) -> Usage:
        usage = usage if isinstance(usage, dict) else {}
        return Usage(
            prompt_tokens=as_int(usage.get("prompt_tokens")),
            completion_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=cached_from_usage(usage),
            reasoning_tokens=reasoning_from_usage(usage),
        )

    def _stream_error(self, payload: Any, model: str) -> Exception:
        return classify_payload(
            payload, engine=self.engine_name, url=self.base_url, model=model, status=200
        )

    def _parse(self, event: SseEvent, model: str) -> Any:
        """One event's JSON; an engine's error event as its error; else a protocol_error."""
        try:
            chunk = json.loads(event.data)
        except RecursionError as exc:
            raise self._protocol_error("a stream event nested too deeply to read") from exc
        except ValueError as exc:
            if event.event == "error":
                raise self._stream_error(event.data, model) from exc
            raise self._protocol_error("a stream event that is not JSON") from exc
        if event.event == "error" or (
            isinstance(chunk, dict) and ("error" in chunk or chunk.get("object") == "error")
        ):
            payload = chunk if error_fields(chunk) else {"error": chunk}
            raise self._stream_error(payload, model)
        if not isinstance(chunk, dict):
            raise self._protocol_error("a stream event that is not a JSON object")
        return chunk

    def _read(self, reader: ChunkReader, event: SseEvent, model: str) -> list[StreamItem]:
        try:
            return reader.read(self._parse(event, model))
        except ProviderError:
            raise
        except ValueError as exc:
            raise self._protocol_error(str(exc) or "a stream event Brim cannot read") from exc
        except _SHAPE_ERRORS as exc:
            raise self._protocol_error(
                f"a stream event Brim cannot read ({type(exc).__name__})"
            ) from exc

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        """One answer. A 404 for the model from a server restarted under another served name
        (served_names.py) is followed once: the request goes again under the id it serves."""
        try:
            async for item in self._stream_once(model, messages, options):
                yield item
            return
        except ModelNotFound:
            if not await self._follow_rename(model):
                raise
        async for item in self._stream_once(model, messages, options):
            yield item

    async def _follow_rename(self, model: str) -> bool:
        cards = await self._model_cards()
        if any(card["id"] == self.served_names.id_for(model) for card in cards):
            return False  # the 404 was about something else
        card = self.served_names.follow(model, cards)
        if card is None:
            return False
        log.warning("%s", renamed_notice(self.where, model, str(card["id"])).text)
        return True

    async def _stream_once(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        body = self.request_body(model, messages, options)
        reader = ChunkReader()
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
                    for item in self._read(reader, event, model):
                        yield item
        except httpx.HTTPError as exc:
            raise classify_transport(exc, engine=self.engine_name, url=self.base_url) from exc
        except WireError as exc:
            raise self._protocol_error(exc.what) from exc
        if events == 0:
            raise self._protocol_error("an answer to a chat request that is not an event stream")
        if not finished and reader.finish is None:
            raise ServerError(f"{self.where} ended the stream before the answer finished")
        for item in reader.flush():
            yield item
        try:
            ready = reader.calls.calls()
        except ValueError as exc:
            raise self._protocol_error(str(exc)) from exc
        if ready:
            yield ToolCallsReady(ready)
        yield StreamDone(self.usage_from(reader.usage, reader.timings), reader.finish)
