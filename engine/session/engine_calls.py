"""The session's dealings with the engine itself, apart from the chat turn: which provider an
agent names, what window the engine serves, and the summarizer compaction calls.

They live apart from `ChatSession` (engine/session/chat.py) because the CLI's probes
(`brim agents`, `brim memory`) need the same provider and window resolution without opening
a conversation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

from engine.agent.shared_pool import retried_while_pool_full
from engine.catalog import catalog_window
from engine.config import AgentConfig
from engine.config.credentials import agent_api_key
from engine.context import SummaryRequest, SummaryResult
from engine.events import (
    EngineLoadingEvent,
    ErrorEvent,
    EventSink,
    LoadProgressEvent,
    NoticeEvent,
    StateEvent,
)
from engine.messages import Message, notice
from engine.providers.base import ChatOptions, EngineReport, Provider, StreamDone, TextDelta
from engine.providers.errors import ProviderError, ServerError
from engine.providers.registry import make_provider
from engine.session.ledger import notice_message
from engine.store import Store
from engine.window.resolution import WindowResolution, resolve_window

log = logging.getLogger(__name__)

SUMMARY_TEMPERATURE = 0.2  # a summary restates; it does not invent


class LoadProgress:
    """The embedded engine's load callback: tells `emit` at most once per percent."""

    def __init__(self, emit: EventSink) -> None:
        self._emit = emit
        self._reported = -1.0

    def __call__(self, fraction: float) -> None:
        if fraction >= 1.0 or fraction - self._reported >= 0.01:
            self._reported = fraction
            self._emit(LoadProgressEvent(round(min(1.0, max(0.0, fraction)), 3)))


def provider_for(
    agent: AgentConfig, *, on_load_progress: Callable[[float], None] | None = None
) -> Provider:
    """Build the provider an agent names (the embedded one gets its model path and pin, and
    `on_load_progress`, which hears 0.0 … 1.0 while it loads its model; the engines behind
    HTTP load theirs themselves)."""
    if agent.provider == "embedded":
        return make_provider(
            "embedded",
            model_path=agent.model or None,
            n_ctx=agent.num_ctx,
            n_threads=agent.n_threads,
            gpu_layers=agent.gpu_layers,
            flash_attn=agent.flash_attn,
            kv_cache_type=agent.kv_cache_type,
            on_load_progress=on_load_progress,
        )
    kw: dict[str, object] = {}
    if agent.request_timeout_s is not None:
        kw["timeout"] = agent.request_timeout_s
    key = agent_api_key(agent)
    if key.value:
        kw["api_key"] = key.value
    # The pin is the provider's, given once: Ollama sends it the same on every request (the
    # agent's, the summarizer's, memory's), llama-server's report compares its slots with it.
    kw["num_ctx"] = agent.num_ctx
    return make_provider(agent.provider, agent.base_url, **kw)


# How long a start waits for an engine that is still loading its model, and how often it asks.
LOAD_WAIT_LIMIT_S = 300.0
LOAD_POLL_S = 0.5

WaitProgress = Callable[[float, float], None]


async def wait_until_ready(
    provider: Provider,
    on_wait: WaitProgress | None = None,
    *,
    limit_s: float = LOAD_WAIT_LIMIT_S,
    poll_s: float = LOAD_POLL_S,
) -> None:
    """Wait while the engine loads its model (llama-server answers 503 then), telling
    `on_wait(waited_s, limit_s)` at every poll. A big model takes minutes to load; failing the
    start on the first 503 made the user press Retry until it was done."""
    started = time.monotonic()
    while not await provider.ready():
        waited = time.monotonic() - started
        if waited >= limit_s:
            raise ServerError(
                f"{getattr(provider, 'where', provider.kind)} was still loading its model after "
                f"{waited:.0f} s (HTTP 503); try again when it is ready",
                status=503,
            )
        if on_wait is not None:
            on_wait(round(waited, 1), limit_s)
        await asyncio.sleep(poll_s)


async def probe_window(
    provider: Provider,
    agent: AgentConfig,
    on_wait: WaitProgress | None = None,
    *,
    load: Callable[[], None] | None = None,
    reuse: bool = False,
) -> WindowResolution:
    """Ask the engine what it serves and resolve the window Brim will account against. With
    `load` (told just before), a model whose window only a load reveals is loaded first.
    With `reuse`, whether the engine moves cached chunks is probed too, once per model, and
    the provider remembers it (`Provider.cache_reuse`: where the checkpoint goes)."""
    await wait_until_ready(provider, on_wait)
    report: EngineReport = await provider.report(agent.model)
    if load is not None:
        report = await load_to_learn(provider, agent, report, load)
    if reuse:
        await provider.learn_cache_reuse(agent.model)
    # A thinking model sampled greedily loops: said at the start, with the window's warnings.
    report.warnings.extend(provider.sampling_plan(agent.model, agent.sampling).warnings())
    return resolve_window(
        report,
        pinned=agent.num_ctx,
        ceiling=agent.max_context_tokens,
        catalog_max=catalog_window(report.model or agent.model),
    )


async def load_to_learn(
    provider: Provider, agent: AgentConfig, report: EngineReport, told: Callable[[], None]
) -> EngineReport:
    """An unpinned agent whose model the engine has not loaded (Ollama, until a request
    loads it with a window of its own choosing) has it loaded now, without an answer, and
    the report then carries the window it was loaded with: every decision taken on the
    window (the tool descriptions, the first answer's cap, the thresholds) is taken on the
    real one. A load that fails leaves the report as it was: the first answer tells then."""
    if report.loaded is not False or agent.num_ctx is not None:
        return report
    told()
    try:
        if not await provider.load_model(agent.model):
            return report
        loaded = await provider.loaded_model(agent.model)
    except ProviderError as exc:
        log.warning("could not load %s to learn its window: %s", agent.model, exc.message)
        return report
    if loaded is None or loaded.window is None:
        return report
    return replace(report, served=loaded.window, loaded=True)


async def probe_window_telling(
    provider: Provider, agent: AgentConfig, emit: EventSink, *, load: bool = False
) -> WindowResolution | None:
    """`probe_window` at a session's start, telling `emit` as it goes: the `loading model`
    state once and an `engine_loading` event every poll while the engine loads its model
    (or, with `load`, while Brim has it load a model that only a load tells the window of),
    an error event (and None) when the engine cannot say. Whether the engine moves cached
    chunks is learnt here too, before the first turn (the probe's two short prompts may
    evict what the server held of a resumed conversation: evaluated again once)."""
    waiting = False

    def loading() -> None:
        nonlocal waiting
        if not waiting:
            waiting = True
            emit(StateEvent("loading model"))

    def on_wait(waited_s: float, limit_s: float) -> None:
        loading()
        emit(EngineLoadingEvent(engine=provider.kind, waited_s=waited_s, limit_s=limit_s))

    try:
        return await probe_window(
            provider, agent, on_wait, load=loading if load else None, reuse=True
        )
    except ProviderError as exc:
        emit(ErrorEvent(exc.kind, exc.message, retryable=exc.retryable))
        return None


def start_notices(
    resolution: WindowResolution, told: Callable[[str], bool]
) -> list[tuple[Message, bool]]:
    """What a start keeps in the conversation, each with whether it is told as it is kept:
    the probe's warnings (the window event already tells them) and the engine's notices,
    told once as notice events with their figures. Either is kept once: a conversation
    that has it (`told`) from an earlier start does not get it again."""
    out: list[tuple[Message, bool]] = [
        (notice(w, "warning"), False) for w in resolution.warnings if not told(w)
    ]
    for found in resolution.notices:
        if not told(found.text):
            event = NoticeEvent("warning", found.text, kind=found.kind, details=found.details)
            out.append((notice_message(event), True))
    return out


async def summarize(
    provider: Provider,
    agent: AgentConfig,
    request: SummaryRequest,
    on_done: Callable[[str, StreamDone], None],
    *,
    model: str | None = None,
) -> SummaryResult:
    """The summarizer: `model` (by default the agent's summarizer model, else its own) on
    the agent's engine. `on_done` hears the model asked and the stream's end (its usage).
    A request built from the conversation as last sent carries the same tool schemas, so
    the engine's cache still matches its prefix (the instruction says not to call them)."""
    chosen = model or agent.summarizer_model or agent.model
    options = ChatOptions(
        max_tokens=request.max_tokens,
        temperature=SUMMARY_TEMPERATURE,
        sampling=agent.sampling,  # the agent's cuts and penalty, at the summary's temperature
        stop=list(request.stop),
        tools=list(request.tools),
        reasoning="off",  # a summary is checked as written: no thinking to strip or wait on
    )

    async def attempt() -> SummaryResult:
        parts: list[str] = []
        finish: str | None = None
        async for item in provider.stream_chat(chosen, request.messages, options):
            if isinstance(item, TextDelta):
                parts.append(item.text)
            elif isinstance(item, StreamDone):
                finish = item.finish_reason
                on_done(chosen, item)
        return SummaryResult("".join(parts), finish)

    # llama-server's shared pool fails a summary as it fails the agent's requests
    return await retried_while_pool_full(attempt)


def record_request_usage(
    store: Store | None,
    provider: Provider | None,
    *,
    agent: str,
    conversation_id: str,
    model: str,
    done: StreamDone,
    purpose: str,
) -> None:
    """The requests beside the agent's cost tokens too: `/usage` counts summaries (purpose
    "summary") and memory's extraction and reflection (purpose "memory")."""
    if store is None or provider is None:
        return
    try:
        store.record_usage(
            conversation_id,
            agent=agent,
            provider=provider.kind,
            model=model or "default",
            prompt_tokens=done.usage.prompt_tokens,
            completion_tokens=done.usage.completion_tokens,
            cached_tokens=done.usage.cached_tokens,
            purpose=purpose,
        )
    except Exception:
        log.exception("could not record the usage of a %s request", purpose)


def usage_recorder(
    store: Callable[[], Store | None],
    provider: Callable[[], Provider | None],
    conversation_id: Callable[[], str],
    *,
    agent: str,
    purpose: str,
) -> Callable[[str, StreamDone], None]:
    """What records each request of `purpose` beside the agent's, for `/usage`: its
    `(model, done)` as the request ends."""

    def record(model: str, done: StreamDone) -> None:
        record_request_usage(
            store(),
            provider(),
            agent=agent,
            conversation_id=conversation_id(),
            model=model,
            done=done,
            purpose=purpose,
        )

    return record
