"""Ollama through its official client, with raw JSON where the client's models drop fields.

Ollama is the engine that lies by omission: it loads a model with whatever `num_ctx` the
request carries (reloading when it changes) and silently cuts a prompt that does not fit.
So a pinned `num_ctx` goes out on every request, the same each time, and the report carries
every fact the server gives: the loaded window (`/api/ps`), the training length and the
Modelfile pin (`/api/show`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import datetime
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import ollama
import pydantic

from engine.messages import Message, ToolCall, model_messages
from engine.providers.base import (
    ChatOptions,
    EngineNotice,
    EngineReport,
    LoadedModel,
    ModelInfo,
    StreamDone,
    StreamItem,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.classify import (
    BadCount,
    classify_http,
    classify_payload,
    classify_transport,
)
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.errors import ModelNotFound, ProviderError, ServerError
from engine.providers.http_base import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    HttpProvider,
    as_count,
    as_int,
    as_window,
    bearer_headers,
)
from engine.providers.model_file import ModelFileRefused, open_vocabulary, refusal_text
from engine.providers.ollama_spill import spill_notice
from engine.providers.ollama_version import (
    Version,
    counts_whole_prompt,
    parse_version,
    takes_strict_requests,
    version_text,
)
from engine.providers.openai_compat import new_call_id
from engine.providers.wire import CallBytes, WireError, guard_hooks

# How long opening the model's vocabulary may take before Brim counts without it.
OPEN_VOCABULARY_S = 30.0
_NUM_CTX_LINE = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)

__all__ = ["OllamaProvider", "counts_whole_prompt", "parse_version", "takes_strict_requests"]


_FROM_LINE = re.compile(r"^\s*FROM\s+(\S.*?)\s*$", re.MULTILINE | re.IGNORECASE)
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})


def modelfile_blob(modelfile: Any) -> str | None:
    """The file the model runs from: the `FROM` line of `/api/show`'s modelfile that is not a
    comment (Ollama writes `# FROM name` as advice, then `FROM /…/blobs/sha256-…`). It is a
    path on the machine Ollama runs on; a name (`FROM llama3.1`) is not a file."""
    if not isinstance(modelfile, str):
        return None
    for match in _FROM_LINE.finditer(modelfile):
        target = match.group(1).strip().strip('"')
        if os.path.isabs(target):
            return target
    return None


def runs_here(base_url: str) -> bool:
    """Whether the Ollama at `base_url` runs on this machine (a loopback address), so the
    model file its `/api/show` names is a file Brim can open too."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def modelfile_num_ctx(parameters: Any) -> int | None:
    """`num_ctx` from `/api/show`'s `parameters` text (one Modelfile parameter per line)."""
    if not isinstance(parameters, str):
        return None
    match = _NUM_CTX_LINE.search(parameters)
    return as_window(match.group(1)) if match else None


def training_length(model_info: Any) -> int | None:
    """`model_info["<arch>.context_length"]`, `<arch>` from `general.architecture`."""
    if not isinstance(model_info, dict):
        return None
    arch = model_info.get("general.architecture")
    if isinstance(arch, str) and arch:
        found = as_window(model_info.get(f"{arch}.context_length"))
        if found is not None:
            return found
    for key, value in model_info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            return as_window(value)
    return None


def _calls_tools(capabilities: Any) -> bool | None:
    """`capabilities` of /api/show lists `tools` for a model that calls them; older servers
    send no list (then: not known, and the tools are sent)."""
    if not isinstance(capabilities, list) or not capabilities:
        return None
    return "tools" in capabilities


def same_model(requested: str, listed: str | None) -> bool:
    """Ollama names default to the `latest` tag: `llama3.1` is `llama3.1:latest`."""
    if not listed:
        return False

    def norm(name: str) -> str:
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"

    return norm(requested) == norm(listed)


def running_entry(running: Any, model: str) -> dict[str, Any] | None:
    """`model`'s entry in an `/api/ps` answer; entries of any other shape are passed over
    (one model listed oddly must not hide the one Brim asks about)."""
    models = running.get("models") if isinstance(running, dict) else None
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict):
            continue
        names = [entry.get("model"), entry.get("name")]
        if any(isinstance(n, str) and same_model(model, n) for n in names):
            return entry
    return None


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


def expiry(value: Any) -> float | None:
    """`expires_at` of an `/api/ps` entry (RFC 3339, nanoseconds) as seconds since the
    epoch; None for anything else, or Go's zero time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError):
        return None
    return when if when > 0 else None


def _ns_to_s(value: Any) -> float | None:
    ns = as_int(value)
    return ns / 1e9 if ns is not None and ns >= 0 else None


# What reading the official client's stream raises on a line of a shape nobody expected.
_SHAPE_ERRORS = (
    ValueError,  # json.loads, pydantic.ValidationError
    pydantic.ValidationError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    OverflowError,
)


class OllamaProvider(HttpProvider):
    kind = "ollama"
    cuts_prompts_silently = True
    engine_name = "Ollama"

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        num_ctx: int | None = None,
        strict: bool = True,
    ) -> None:
        """`num_ctx`: the agent's pin, sent as `options.num_ctx` on every request (None: the
        server's own window). `strict`: refuse Ollama's silent cut where the server can
        (`truncate: false`, `shift: false`), so an over-long prompt is an overflow error."""
        super().__init__(
            base_url,
            timeout=timeout,
            connect_timeout=connect_timeout,
            api_key=api_key,
            transport=transport,
            num_ctx=num_ctx,
        )
        # The official client takes httpx's arguments: the same route (never a proxy for a
        # loopback engine) and the same bearer key as the raw JSON calls.
        self.client = self._client(
            ollama.AsyncClient,
            host=self.base_url,
            timeout=self.timeout,
            headers=bearer_headers(api_key),
            transport=transport,
            event_hooks=guard_hooks(),  # the same wire limits (UTF-8, bounded lines)
        )
        self.strict = strict
        self.version: Version | None = None  # from /api/version, at report()
        self._blobs: dict[str, str | None] = {}  # model -> its GGUF, from /api/show
        self._tokenizers: dict[str, Any] = {}  # model -> GgufTokenizer or None
        self._notes: dict[str, str] = {}  # model -> why its count is an estimate
        self.spill: dict[str, int | str] | None = None  # the last report's spill, if any

    def _classify(self, exc: BaseException, model: str | None) -> ProviderError:
        """Whatever the official client raised, as one of Brim's errors."""
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, ollama.ResponseError):
            if exc.status_code is None or exc.status_code < 0:  # an error line mid-stream
                return classify_payload(
                    {"error": exc.error}, engine=self.engine_name, url=self.base_url, model=model
                )
            return classify_http(
                exc.status_code,
                json.dumps({"error": exc.error}),
                engine=self.engine_name,
                url=self.base_url,
                model=model,
            )
        if isinstance(exc, httpx.HTTPError | ConnectionError):
            return classify_transport(exc, engine=self.engine_name, url=self.base_url)
        if isinstance(exc, WireError):
            return self._protocol_error(exc.what)
        if isinstance(exc, BadCount):
            return self._protocol_error(str(exc))
        if isinstance(exc, RecursionError):
            return self._protocol_error("a stream line nested too deeply to read")
        if isinstance(exc, _SHAPE_ERRORS):
            # The client's json.loads and pydantic models, or its own `part.get` on a line
            # that is not an object: whatever the shape, the engine broke the protocol.
            return self._protocol_error(f"an answer Brim cannot read ({type(exc).__name__})")
        return ServerError(f"{self.where} failed: {type(exc).__name__}")

    async def list_models(self) -> list[ModelInfo]:
        tags = await self._get_json("/api/tags")
        models = tags.get("models") if isinstance(tags, dict) else None
        if not isinstance(models, list):
            raise self._protocol_error("an /api/tags answer without a `models` list")
        out = []
        for entry in models:
            if not isinstance(entry, dict):
                continue
            name = entry.get("name") or entry.get("model")
            if not isinstance(name, str) or not name:
                continue
            details = found if isinstance(found := entry.get("details"), dict) else {}
            out.append(ModelInfo(id=name, model_max=as_window(details.get("context_length"))))
        return out

    async def _installed(self) -> str:
        """The models this Ollama has, for an error that says what to pick instead."""
        try:
            names = sorted(info.id for info in await self.list_models())
        except ProviderError:
            return "its model list did not load"
        return "it has: " + (", ".join(names) if names else "no models yet")

    async def _read_version(self) -> None:
        """`/api/version`, which decides what `prompt_eval_count` means; a server that does
        not answer it is treated as current."""
        try:
            body = await self._get_json("/api/version")
        except ProviderError:
            return
        if isinstance(body, dict):
            self.version = parse_version(body.get("version"))

    async def loaded_model(self, model: str) -> LoadedModel | None:
        """`model` as `/api/ps` lists it now: the window it is loaded with (None before v0.10,
        which does not say) and its expiry; None when it is not loaded."""
        try:
            running = await self._get_json("/api/ps")
        except ProviderError:
            return None
        entry = running_entry(running, model)
        if entry is None:
            return None
        return LoadedModel(as_int(entry.get("context_length")), expiry(entry.get("expires_at")))

    async def gpu_spill(self, model: str) -> EngineNotice | None:
        """`/api/ps` now: the share of `model` off the GPU (engine/providers/ollama_spill.py)."""
        try:
            entry = running_entry(await self._get_json("/api/ps"), model)
        except ProviderError:
            return None
        if entry is None:
            return None
        here = self._blobs.get(model) if runs_here(self.base_url) else None
        return await spill_notice(model, entry, here)

    def set_pin(self, num_ctx: int) -> bool:
        """The pin every later request carries (and so the window the next one loads)."""
        self.num_ctx = num_ctx
        return True

    async def load_model(self, model: str) -> bool:
        """Load `model` without answering: `/api/chat` with no messages, which Ollama answers
        `done_reason: "load"` once the runner is up (server/routes.go, ChatHandler, on every
        version Brim supports). The body is `chat_body`'s, so the runner options (`num_ctx`,
        `shift`) are those of every later request and none of them reloads it; no
        `keep_alive` either, as no request of Brim's sends one."""
        body = {**self.chat_body(model, [], ChatOptions()), "stream": False}
        try:
            answer = await self.client._request(ollama.ChatResponse, "POST", "/api/chat", json=body)
        except Exception as exc:
            raise self._classify(exc, model) from exc
        return answer.done_reason == "load"

    async def report(self, model: str) -> EngineReport:
        await self._read_version()
        if not model:
            raise ModelNotFound(
                f"no model named for {self.where}: set `model` in the agent file (or pass "
                f"--model); {await self._installed()}"
            )
        # Raw JSON: the client's ShowResponse requires `model_info`, which older servers omit.
        try:
            show = await self._post_json("/api/show", {"model": model}, model=model)
        except ModelNotFound as exc:
            raise ModelNotFound(
                f"{exc}; pull it with `ollama pull {model}`; {await self._installed()}",
                status=exc.status,
            ) from exc
        if not isinstance(show, dict):
            raise self._protocol_error("an /api/show answer that is not a JSON object")
        self._blobs[model] = modelfile_blob(show.get("modelfile"))
        await self._prepare_vocabulary(model)
        # Raw JSON too: the client's ProcessResponse fails whole on one entry it cannot
        # read (another model's context_length as text), and one bad entry is not fatal.
        running = await self._get_json("/api/ps", model=model)
        entry = running_entry(running, model)
        here = self._blobs[model] if runs_here(self.base_url) else None
        spill = await spill_notice(model, entry, here) if entry is not None else None
        self.spill = spill.details if spill is not None else None
        return EngineReport(
            provider=self.kind,
            model=model,
            window_rule="per-request",
            served=as_window(entry.get("context_length")) if entry is not None else None,
            model_max=training_length(show.get("model_info")),
            loaded=entry is not None,
            modelfile_num_ctx=modelfile_num_ctx(show.get("parameters")),
            tool_calls=_calls_tools(show.get("capabilities")),
            warnings=self._version_warnings(),
            notices=[spill] if spill is not None else [],
        )

    def _version_warnings(self) -> list[str]:
        """What this server's version costs, said once at the start."""
        shown = version_text(self.version)
        out: list[str] = []
        if not counts_whole_prompt(self.version):
            out.append(
                f"Ollama {shown} reports only the prompt tokens its cache did not serve, so "
                "Brim cannot read the prompt's size from it: the gauge stays an estimate and "
                "/usage counts no prompt tokens. Ollama 0.30.1 and later report the whole "
                "prompt again."
            )
        if self.strict and not takes_strict_requests(self.version):
            out.append(
                f"Ollama {shown} cannot be told to refuse an over-long prompt (truncate: "
                "false needs 0.12.6 or later): it cuts one silently, and Brim can only tell "
                "from the count it reports afterwards."
            )
        return out

    def segment_tokenizer(self, model: str) -> Any:
        """The model's own vocabulary, opened vocabulary-only from the GGUF that `/api/show`
        names, when Ollama runs on this machine and the file is a GGUF Brim may open: Brim
        then counts the text exactly (Ollama's framing is learned as a residual). None
        otherwise, with the reason kept for `/context`. Usually opened already by
        `report`, off the event loop (a slow disk then delays no signal)."""
        if model not in self._tokenizers:
            self._keep_vocabulary(model, *self._open_vocabulary(model))
        return self._tokenizers[model]

    def _keep_vocabulary(self, model: str, tokenizer: Any, note: str | None) -> None:
        self._tokenizers[model] = tokenizer
        if note:
            self._notes[model] = note

    def _open_vocabulary(self, model: str) -> tuple[Any, str | None]:
        blob = self._blobs.get(model)
        if not runs_here(self.base_url):
            host = urlsplit(self.base_url).hostname or self.base_url
            return None, (
                f"Ollama runs on another machine ({host}), so the model's own vocabulary "
                "cannot be opened here"
            )
        if blob is None:
            return None, "Ollama's /api/show names no model file (no FROM path)"
        try:
            return open_vocabulary(blob), None
        except ModelFileRefused as exc:
            return None, refusal_text(blob, exc)
        except Exception as exc:  # not a GGUF, a vocabulary llama.cpp cannot load
            return None, f"the model file {blob} could not be opened ({exc})"

    async def _prepare_vocabulary(self, model: str) -> None:
        """Open the vocabulary in a worker thread, within OPEN_VOCABULARY_S: cancelling
        the report (Esc, SIGTERM) is not held up by the disk."""
        if model in self._tokenizers:
            return
        try:
            found = await asyncio.wait_for(
                asyncio.to_thread(self._open_vocabulary, model), OPEN_VOCABULARY_S
            )
        except TimeoutError:
            found = (
                None,
                f"the model file Ollama names ({self._blobs.get(model)}) took more than "
                f"{OPEN_VOCABULARY_S:g} s to open; it was not used",
            )
        self._keep_vocabulary(model, *found)

    def model_blob(self, model: str) -> str | None:
        """The GGUF `/api/show`'s `FROM` line named at `report` (a path on Ollama's machine)."""
        return self._blobs.get(model)

    async def show_blob(self, model: str) -> str | None:
        """The GGUF `/api/show` names for `model`, asked now (no vocabulary is opened)."""
        show = await self._post_json("/api/show", {"model": model}, model=model)
        self._blobs[model] = modelfile_blob(
            show.get("modelfile") if isinstance(show, dict) else None
        )
        return self._blobs[model]

    def counting_note(self, model: str) -> str:
        return self._notes.get(model, "Ollama cannot count tokens for Brim")

    def counting_source(self, model: str) -> str:
        """How the count is made when it is exact."""
        return f"the model's own GGUF vocabulary ({self._blobs.get(model)}), opened read-only"

    @property
    def refuses_cuts(self) -> bool:
        """Whether every request carries `truncate: false` and `shift: false`: asked for,
        and the server takes them (v0.12.6 on; an unknown version is taken as current)."""
        return self.strict and takes_strict_requests(self.version)

    def engine_options(self, options: ChatOptions) -> dict[str, Any]:
        """`options` of one `/api/chat` request. The part that decides how the model is loaded
        (`num_ctx`) is the provider's, the same on every request, whoever asks (the agent,
        the summarizer, memory): a request with another runner option reloads the model.
        What a request may set for itself (output cap, sampling, stops) only samples: the
        sampler settings go in full (engine/providers/sampling.py), so neither Ollama's
        defaults nor a Modelfile's PARAMETER lines decide them."""
        out: dict[str, Any] = {}
        if self.num_ctx is not None:
            out["num_ctx"] = self.num_ctx
        if options.max_tokens is not None:
            out["num_predict"] = options.max_tokens
        out.update(options.sampled().fields("ollama"))
        if options.stop:
            out["stop"] = list(options.stop)
        return out

    def chat_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        """The one `/api/chat` body Brim sends. `truncate` and `shift` go at the top level, not
        among the options (Ollama's ChatRequest), and only to a server that takes them."""
        body: dict[str, Any] = {
            "model": model,
            "messages": [to_ollama(m) for m in model_messages(messages)],
            "stream": True,
        }
        if options.tools:
            body["tools"] = list(options.tools)
        engine_options = self.engine_options(options)
        if engine_options:
            body["options"] = engine_options
        if self.refuses_cuts:
            body["truncate"] = False
            body["shift"] = False
        return body

    async def _chat_stream(self, body: dict[str, Any]) -> AsyncGenerator[ollama.ChatResponse, None]:
        """The official client's streaming request with Brim's own body: its `chat()` has no
        `truncate` or `shift` (ollama-python 0.6), its reader and errors are the same."""
        stream = await self.client._request(
            ollama.ChatResponse, "POST", "/api/chat", json=body, stream=True
        )
        # The client returns its `inner()` async generator (ollama/_client.py), which its
        # stubs call an AsyncIterator; stream_chat closes it (aclose) when it stops early.
        return cast(AsyncGenerator[ollama.ChatResponse, None], stream)

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        body = self.chat_body(model, messages, options)
        calls: list[ToolCall] = []
        taken = CallBytes()
        text = StreamText()
        done: Any = None
        try:
            stream = await self._chat_stream(body)
            async with aclosing(stream):
                async for part in stream:
                    message = part.message
                    if message.content:
                        piece = text.feed(message.content)
                        if piece:
                            yield TextDelta(piece)
                    for call in message.tool_calls or ():
                        arguments = call.function.arguments
                        taken.add(call.function.name, str(arguments))
                        calls.append(
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
                        done = part
                        # On 0.30.0 alone the count leaves out what the prompt cache
                        # served: it is not the prompt's size, and read as one every
                        # follow-up would look cut. Not reported there, then.
                        prompt = as_count(done.prompt_eval_count, "prompt_eval_count")
                        usage = Usage(
                            prompt_tokens=prompt if counts_whole_prompt(self.version) else None,
                            completion_tokens=as_count(done.eval_count, "eval_count"),
                            cached_tokens=None,  # Ollama does not report prompt-cache reuse
                            prompt_eval_s=_ns_to_s(done.prompt_eval_duration),
                            eval_s=_ns_to_s(done.eval_duration),
                            load_s=_ns_to_s(done.load_duration),
                        )
                        break
        except Exception as exc:
            raise self._classify(exc, model) from exc
        if done is None:
            raise ServerError(f"{self.where} ended the stream before the answer finished")
        tail = text.flush()
        if tail:
            yield TextDelta(tail)
        finish = clean(done.done_reason) if isinstance(done.done_reason, str) else None
        if calls:
            yield ToolCallsReady(tuple(calls))
            if finish in (None, "stop"):
                finish = "tool_calls"
        yield StreamDone(usage, finish)

    async def aclose(self) -> None:
        await self.client.close()
        await super().aclose()
