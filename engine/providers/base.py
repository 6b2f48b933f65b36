"""The one interface every engine implements: Brim's transport seam.

Everything above this seam (window resolution, counting, the ladder, the agent loop, the
desktop) speaks only these types, so one small fake per engine protocol tests all of it.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from engine.messages import Message, ToolCall
from engine.providers.cache_reuse import NOT_PROBED, NOT_YET_PROBED, CacheReuse
from engine.providers.sampling import Sampling
from engine.providers.sampling_source import ModelSampling, SamplingPlan, plan

if TYPE_CHECKING:
    from engine.events import NoticeKind
    from engine.providers.engine_segments import EngineSegments

PROVIDER_KINDS: tuple[str, ...] = ("embedded", "ollama", "llamacpp", "vllm", "sglang")

DEFAULT_BASE_URLS: dict[str, str] = {
    "ollama": "http://127.0.0.1:11434",
    "llamacpp": "http://127.0.0.1:8080",
    "vllm": "http://127.0.0.1:8000",
    "sglang": "http://127.0.0.1:30000",
}


@dataclass
class ModelInfo:
    id: str
    served_window: int | None = None  # vLLM/SGLang max_model_len, llama-server meta.n_ctx
    model_max: int | None = None  # training length where the listing carries it
    parent: str | None = None  # a LoRA card's base model (vLLM)
    owned_by: str | None = None


ReasoningLevel = Literal["off", "on", "low", "medium", "high"]
REASONING_LEVELS: tuple[str, ...] = ("off", "on", "low", "medium", "high")

WindowRule = Literal["per-request", "slot", "allocated", "served-limit"]


@dataclass
class EngineReport:
    """What the engine itself says about the window for one model. Every field may be None:
    versions differ, and an engine that does not say is not the same as one that says 0."""

    provider: str
    model: str
    # How this engine decides the window, which decides what a pin does (each provider says):
    # "per-request" (Ollama: the pin travels with every request and the engine loads it),
    # "slot" (llama-server: fixed at start per slot; a pin only accounts for less),
    # "allocated" (the embedded engine allocates the pin itself), "served-limit" (vLLM,
    # SGLang, any server with a max_model_len fixed at start).
    window_rule: WindowRule = "served-limit"
    served: int | None = None  # the window the engine serves now (per slot for llama-server)
    model_max: int | None = None  # the model's training length
    slots: int | None = None  # llama-server total_slots
    unified_pool: bool = False  # llama-server slots share one KV pool
    loaded: bool | None = None  # Ollama: the model is in /api/ps
    modelfile_num_ctx: int | None = None  # Ollama: PARAMETER num_ctx in the Modelfile
    # Whether the model can call tools at all (the embedded engine reads its chat template);
    # None: the engine does not say, and Brim sends the tools and lets it answer.
    tool_calls: bool | None = None
    # Whether the model can think (reason before it answers): Ollama's /api/show
    # `capabilities` ("thinking"), llama-server's /props `chat_template_caps.supports_thinking`.
    # None: the engine does not say. A request asking a model that cannot think to think is
    # not sent as such (Ollama answers it 400 "does not support thinking").
    thinks: bool | None = None
    # Whether the model's chat template renders an assistant message's reasoning when it is
    # sent back (llama-server's `chat_template_caps.supports_preserve_reasoning`); None: not said.
    preserves_reasoning: bool | None = None
    warnings: list[str] = field(default_factory=list)
    notices: list[EngineNotice] = field(default_factory=list)  # told once, with their data


@dataclass(frozen=True)
class EngineNotice:
    """A fact about the engine worth telling the user once, with its figures for a program
    reading the event stream (`kind` names it; `details` holds what it reports)."""

    kind: NoticeKind
    text: str
    details: dict[str, int | str] = field(default_factory=dict)


# An OpenAI-compatible provider that finds Ollama behind its URL (its `/v1` endpoint, which
# takes no num_ctx and never refuses an over-long prompt): details engine, version, provider.
NOTICE_OLLAMA_OPENAI_ENDPOINT: Final = "ollama_openai_endpoint"
# A vLLM or SGLang that serves one model under another name than the agent's (restarted with
# another --served-model-name): Brim uses the served id. Details: model (the agent's), served.
NOTICE_MODEL_RENAMED: Final = "model_renamed"


@dataclass
class ChatOptions:
    max_tokens: int | None = None
    # A request's own temperature over `sampling`'s (the summarizer's, memory's); None: as
    # `sampling` says.
    temperature: float | None = None
    stop: list[str] = field(default_factory=list)  # generation ends at the first of these
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI function schemas
    # The agent's settings (None: unset); what a request carries of them, and what fills in
    # the rest, is the provider's `sampling_plan` (engine/providers/sampling_source.py).
    sampling: Sampling = field(default_factory=Sampling)
    # Whether and how hard a thinking model reasons: None leaves it to the engine and the
    # model (Ollama thinks by default for a model with the `thinking` capability); "off",
    # "on", "low", "medium", "high" are mapped to each engine by its provider. Brim's own side
    # requests (checkpoint, memory, guided questions) send "off".
    reasoning: ReasoningLevel | None = None

    def sampled(self) -> Sampling:
        """The settings this request is sent with."""
        return self.sampling.with_temperature(self.temperature)


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # None: not reported by this engine
    # Of `completion_tokens`, those spent reasoning, where the engine counts them apart
    # (`usage.completion_tokens_details.reasoning_tokens`); None: not reported.
    reasoning_tokens: int | None = None
    prompt_eval_s: float | None = None  # time the engine spent evaluating the prompt
    eval_s: float | None = None  # time spent generating
    load_s: float | None = None  # time before the engine could start (Ollama's load_duration)


@dataclass(frozen=True)
class LoadedModel:
    """A model as the engine holds it loaded now (Ollama's /api/ps entry): the window it was
    loaded with and when it will be unloaded if nothing asks for it (seconds since the epoch;
    None where the engine does not say)."""

    window: int | None
    expires_at: float | None = None


@dataclass
class TextDelta:
    text: str


@dataclass
class ReasoningDelta:
    """A piece of what a thinking model reasons before (or between) its answer: Ollama's
    `message.thinking`, llama-server's and SGLang's `reasoning_content`, vLLM's `reasoning`,
    or the inside of a `<think>…</think>` block a server left in the content. Never part of
    the answer's text."""

    text: str


@dataclass
class ToolCallsReady:
    """The complete tool calls of one answer, assembled from the engine's deltas."""

    calls: tuple[ToolCall, ...]


@dataclass
class StreamDone:
    usage: Usage
    finish_reason: str | None = None  # "stop" | "length" | "tool_calls" | None


StreamItem = TextDelta | ReasoningDelta | ToolCallsReady | StreamDone


@dataclass(frozen=True)
class PromptText:
    """A request as an engine's chat template rendered it, and what rendered it."""

    text: str
    rendered_by: str  # e.g. "llama-server's /apply-template"


class SegmentTokenizer(Protocol):
    """Counts tokens exactly as one engine's tokenizer and chat template do, one message at a
    time, so a request's count is the sum of cached per-message counts plus fixed framing."""

    def count_message(self, message: Message) -> int: ...

    def count_text(self, text: str) -> int: ...

    def request_overhead(self, has_tools: bool) -> int: ...


class Provider(ABC):
    """One engine at one base URL. Cancelling the task that iterates `stream_chat` stops the
    generation and releases the connection (or tells the embedded child to stop)."""

    kind: str = ""
    # Whether the engine may answer from a prompt it cut to fit, without an error (Ollama
    # before `truncate: false`, or where a model ignores it): the loop then compares what it
    # counted with what the engine says it read. Every other engine refuses an over-long one.
    cuts_prompts_silently: bool = False
    # Whether the model is loaded into this machine's memory by Brim itself (the embedded
    # engine): the session then says "loading model" while it loads, and a reflection, which
    # loads its own copy, waits for the session to close rather than run beside it.
    loads_model_in_process: bool = False
    # Whether `render_prompt` can show a request as the engine's chat template makes it.
    renders_prompts: bool = False

    def __init__(self, base_url: str | None = None) -> None:
        url = (base_url or DEFAULT_BASE_URLS.get(self.kind, "")).rstrip("/")
        # `http://host:8000/v1` is what OpenAI-style docs tell people to paste; every path
        # Brim asks for (/v1/models, /props, /api/tags) hangs off the server's root.
        self.base_url = url.removesuffix("/v1")
        # What the cache-reuse probe found, per model of this one server (`learn_cache_reuse`).
        self.reuse_found: dict[str, CacheReuse] = {}
        # What each model names for its own sampling, as `report` found it (absent: not known).
        self.model_sampling: dict[str, ModelSampling] = {}

    def serves_bundled(self, model: str) -> bool:
        """Whether `model` is one Brim bundles (its measured defaults then fill in)."""
        return False

    def sampling_plan(self, model: str, sampling: Sampling) -> SamplingPlan:
        """What a request for `model` sends of `sampling`, and where each setting comes from
        (engine/providers/sampling_source.py)."""
        return plan(
            sampling, self.model_sampling.get(model), self.kind, bundled=self.serves_bundled(model)
        )

    @abstractmethod
    async def list_models(self) -> list[ModelInfo]: ...

    @abstractmethod
    async def report(self, model: str) -> EngineReport:
        """Ask the engine what window it serves for `model` (no generation)."""

    @abstractmethod
    def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]: ...

    async def warm(self, model: str, messages: list[Message], options: ChatOptions) -> None:
        """Have the engine evaluate `messages` into its prompt cache before they are needed
        (after a compaction rebuilt them): one token asked for, read and dropped. The same
        on every engine: llama-server answers `n_predict: 0` with one token too (seen on
        the real server: `completion_tokens` 1), vLLM and SGLang take `max_tokens: 1`, and
        the embedded engine evaluates the prompt before its first token."""
        stream = self.stream_chat(model, messages, replace(options, max_tokens=1))
        async with contextlib.aclosing(stream):
            async for _item in stream:
                pass

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        """The exact prompt tokens this request will cost, where the engine can say."""
        return None

    async def render_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> PromptText | None:
        """The prompt text the engine makes of this request with its own chat template, and
        who rendered it; None where the engine cannot say (its wire messages are the truth)."""
        return None

    async def loaded_window(self, model: str) -> int | None:
        """The window the engine loaded `model` with for the requests just made, where only a
        request reveals it (Ollama's /api/ps after a lazy load); None: nothing more to say."""
        loaded = await self.loaded_model(model)
        return loaded.window if loaded is not None else None

    async def loaded_model(self, model: str) -> LoadedModel | None:
        """`model` as the engine holds it loaded now, where the engine loads models on demand
        and says so (Ollama's /api/ps); None: not loaded, or nothing to say."""
        return None

    async def load_model(self, model: str) -> bool:
        """Have the engine load `model` without answering, with the options every request
        carries (so no request reloads it), where a load is what reveals its window (Ollama:
        `/api/chat` with no messages). False where nothing was loaded."""
        return False

    async def gpu_spill(self, model: str) -> EngineNotice | None:
        """A notice when the engine holds part of `model` off the GPU now (Ollama's /api/ps
        `size_vram < size`), with its figures; None: all on the GPU, or nothing to say."""
        return None

    def set_pin(self, num_ctx: int) -> bool:
        """Ask for `num_ctx` from the next request on (the fit policy lowered the pin); False
        where the engine takes no window from Brim's requests."""
        return False

    async def ready(self) -> bool:
        """False while the engine answers but is still loading its model (llama-server's
        /health 503), so the start waits instead of failing."""
        return True

    def segment_tokenizer(self, model: str) -> SegmentTokenizer | None:
        """A local exact tokenizer for this engine's model, where one exists."""
        return None

    async def probe_cache_reuse(self, model: str) -> CacheReuse:
        """Whether the engine reuses a kept run of its cache at a new position, not only the
        common prefix, found by asking it (engine/providers/cache_reuse.py). A compaction
        lays its checkpoint after the kept messages only where it does."""
        return NOT_PROBED

    async def learn_cache_reuse(self, model: str) -> CacheReuse:
        """`probe_cache_reuse`, asked once per model of this server and remembered."""
        found = self.reuse_found.get(model)
        if found is None:
            found = self.reuse_found[model] = await self.probe_cache_reuse(model)
        return found

    def cache_reuse(self, model: str) -> CacheReuse:
        """What the probe found for `model`; "not probed" before it ran."""
        return self.reuse_found.get(model, NOT_YET_PROBED)

    def engine_segments(self, model: str) -> EngineSegments | None:
        """Exact per-message counts through the engine's own endpoints, where it has them."""
        return None

    async def count_texts(self, model: str, texts: list[str]) -> list[int] | None:
        """The tokens of each text by the model's own tokenizer (no chat template), where
        the engine tokenizes text but cannot count a chat; None where it cannot."""
        return None

    def counts_texts(self, model: str) -> str:
        """How `count_texts` counts, for `/context` ("" where this engine does not)."""
        return ""

    def counting_source(self, model: str) -> str:
        """How `segment_tokenizer` counts, for `/context` ("" when it does not)."""
        return ""

    def counting_note(self, model: str) -> str:
        """Why Brim's count for this engine is an estimate (shown by `/context`); engines that
        count exactly say how instead."""
        return "this engine cannot count tokens for Brim"

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or child processes."""
