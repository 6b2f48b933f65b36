"""Ollama through its official client, with raw JSON where the client's models drop fields.

Ollama is the engine that lies by omission: it loads a model with whatever `num_ctx` the
request carries (reloading when it changes) and silently cuts a prompt that does not fit.
So a pinned `num_ctx` goes out on every request, the same each time, and the report carries
every fact the server gives: the loaded window (`/api/ps`), the training length and the
Modelfile pin (`/api/show`).

Its neighbours: what those answers say (engine/providers/ollama_answers.py), the chat
request and its streamed answer (engine/providers/ollama_chat.py), the model's own
vocabulary for counting (engine/providers/ollama_vocabulary.py), the share off the GPU
(engine/providers/ollama_spill.py) and what each server version can do
(engine/providers/ollama_version.py).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

import httpx
import ollama
import pydantic

from engine.messages import Message
from engine.providers.base import (
    ChatOptions,
    EngineNotice,
    EngineReport,
    LoadedModel,
    ModelInfo,
    StreamItem,
)
from engine.providers.classify import (
    BadCount,
    classify_http,
    classify_payload,
    classify_transport,
)
from engine.providers.errors import ModelNotFound, ProviderError, ServerError
from engine.providers.http_base import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    HttpProvider,
    as_int,
    as_window,
    bearer_headers,
)
from engine.providers.ollama_answers import (
    calls_tools,
    expiry,
    has_thinking,
    modelfile_blob,
    modelfile_num_ctx,
    modelfile_sampling,
    running_entry,
    runs_here,
    thinks,
    training_length,
)
from engine.providers.ollama_chat import ChatAnswer, ChatReader, chat_body
from engine.providers.ollama_spill import spill_notice
from engine.providers.ollama_version import (
    Version,
    counts_whole_prompt,
    parse_version,
    takes_strict_requests,
    version_text,
)
from engine.providers.ollama_vocabulary import Vocabularies
from engine.providers.sampling_source import ModelSampling
from engine.providers.wire import WireError, guard_hooks

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
        self.vocabularies = Vocabularies(self.base_url)
        self.spill: dict[str, int | str] | None = None  # the last report's spill, if any
        self.thinks: dict[str, bool | None] = {}  # model -> /api/show says it thinks

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
            answer = await self.client._request(ChatAnswer, "POST", "/api/chat", json=body)
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
        # What the Modelfile names: Ollama applies it to what a request leaves out, its own
        # defaults (api/types.go DefaultOptions) to the rest; those are not reported.
        self.model_sampling[model] = ModelSampling(
            named=modelfile_sampling(show.get("parameters")),
            thinks=thinks(show.get("capabilities")),
        )
        await self.vocabularies.prepare(model, self._blobs[model])
        # Raw JSON too: the client's ProcessResponse fails whole on one entry it cannot
        # read (another model's context_length as text), and one bad entry is not fatal.
        running = await self._get_json("/api/ps", model=model)
        entry = running_entry(running, model)
        here = self._blobs[model] if runs_here(self.base_url) else None
        spill = await spill_notice(model, entry, here) if entry is not None else None
        self.spill = spill.details if spill is not None else None
        self.thinks[model] = has_thinking(show.get("capabilities"))
        return EngineReport(
            provider=self.kind,
            model=model,
            window_rule="per-request",
            served=as_window(entry.get("context_length")) if entry is not None else None,
            model_max=training_length(show.get("model_info")),
            loaded=entry is not None,
            modelfile_num_ctx=modelfile_num_ctx(show.get("parameters")),
            tool_calls=calls_tools(show.get("capabilities")),
            thinks=self.thinks[model],
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
        """The model's own vocabulary, opened from the GGUF that `/api/show` names
        (engine/providers/ollama_vocabulary.py), or None with the reason kept for
        `/context`. Usually opened already by `report`, off the event loop (a slow disk
        then delays no signal)."""
        return self.vocabularies.tokenizer(model, self._blobs.get(model))

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
        return self.vocabularies.note(model)

    def counting_source(self, model: str) -> str:
        """How the count is made when it is exact."""
        return f"the model's own GGUF vocabulary ({self._blobs.get(model)}), opened read-only"

    @property
    def refuses_cuts(self) -> bool:
        """Whether every request carries `truncate: false` and `shift: false`: asked for,
        and the server takes them (v0.12.6 on; an unknown version is taken as current)."""
        return self.strict and takes_strict_requests(self.version)

    def chat_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        """The one `/api/chat` body (engine/providers/ollama_chat.py) with this provider's
        pin, and `truncate: false` where the server takes it. The sampling is what the plan
        sends (engine/providers/sampling_source.py): a Modelfile's PARAMETER lines decide
        what the agent leaves unset."""
        sent = self.sampling_plan(model, options.sampled()).send
        options = dataclasses.replace(options, sampling=sent, temperature=None)
        return chat_body(
            model,
            messages,
            options,
            num_ctx=self.num_ctx,
            refuses_cuts=self.refuses_cuts,
            thinks=self.thinks.get(model),
        )

    async def _chat_stream(self, body: dict[str, Any]) -> AsyncGenerator[ollama.ChatResponse, None]:
        """The official client's streaming request with Brim's own body: its `chat()` has no
        `truncate` or `shift` (ollama-python 0.6), its reader and errors are the same; each
        line read as a `ChatAnswer`, which keeps `prompt_eval_cached_count`."""
        stream = await self.client._request(ChatAnswer, "POST", "/api/chat", json=body, stream=True)
        # The client returns its `inner()` async generator (ollama/_client.py), which its
        # stubs call an AsyncIterator; stream_chat closes it (aclose) when it stops early.
        return cast(AsyncGenerator[ollama.ChatResponse, None], stream)

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        body = self.chat_body(model, messages, options)
        reader = ChatReader(whole_prompt=counts_whole_prompt(self.version))
        try:
            stream = await self._chat_stream(body)
            async with aclosing(stream):
                async for part in stream:
                    for item in reader.feed(part):
                        yield item
                    if reader.done is not None:
                        break
        except Exception as exc:
            raise self._classify(exc, model) from exc
        for item in reader.finish(self.where):
            yield item

    async def aclose(self) -> None:
        await self.client.close()
        await super().aclose()
