"""The model that writes a session's checkpoints, and what Brim knows of it.

An agent may name a `summarizer_model` of its own. Then, once per session, the engine is
asked for that model's window (its prompt budget is its own, not the agent's); a model the
engine does not serve (404) is dropped, once and said so, for the agent's own model, which
then summarizes against the agent's window and shares its cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine.config import AgentConfig
from engine.context import ContextManager, SummaryRequest, SummaryResult
from engine.memory import Complete, provider_complete
from engine.providers.base import Provider, StreamDone
from engine.providers.errors import ModelNotFound, ProviderError
from engine.session.engine_calls import probe_window, summarize

log = logging.getLogger(__name__)


class Summarizer:
    """Chooses the summarizer model and runs the summaries compaction asks for.

    `provider` is the session's engine as it is at each call (set once it started) and
    `ladder` its running context manager (None before a loop is wired), told of the
    summarizer's window and cache as they are learned; `on_fallback(text)` hears the one
    warning said when the summarizer model is dropped (the session saves it);
    `on_usage(model, done)` hears each summary's end, for `/usage`."""

    def __init__(
        self,
        agent: AgentConfig,
        *,
        provider: Callable[[], Provider | None],
        ladder: Callable[[], ContextManager | None],
        on_fallback: Callable[[str], None],
        on_usage: Callable[[str, StreamDone], None],
    ) -> None:
        self.agent = agent
        self._provider = provider
        self._ladder = ladder
        self._on_fallback = on_fallback
        self._on_usage = on_usage
        self.fell_back = False  # a summarizer_model the engine does not serve
        self.window: int | None = None  # the summarizer model's own window, once probed
        self._probed = False

    @property
    def separate(self) -> bool:
        """The agent names a summarizer model other than its own."""
        chosen = self.agent.summarizer_model
        return bool(chosen) and chosen != self.agent.model

    @property
    def shares_cache(self) -> bool:
        """The summaries run on the agent's own model (the engine's cache still matches)."""
        return not self.separate or self.fell_back

    def model(self) -> str:
        """The agent's summarizer_model while the engine serves it, else the agent's own."""
        chosen = self.agent.summarizer_model
        if not chosen or self.fell_back:
            return self.agent.model
        return chosen

    def fall_back(self, exc: ProviderError) -> None:
        """Said once: the summarizer model is not served, so the agent's model summarizes
        (docs/design/context.md), against the agent's window."""
        if self.fell_back:
            return
        self.fell_back = True
        self.window = None
        ladder = self._ladder()
        if ladder is not None:
            ladder.summarizer_window = None
            ladder.summarizer_shares_cache = True
        self._on_fallback(
            f"The engine does not serve the summarizer model {self.agent.summarizer_model!r} "
            f"({exc.message}); {self.agent.model or 'the agent model'} writes the "
            "checkpoints instead. Fix summarizer_model in the agent to use another."
        )

    def completion(self, on_done: Callable[[str, StreamDone], None]) -> Complete:
        """Memory's completion on the summarizer model. Memory asks for it only with the
        window known, and the window is learned from the engine, so the session started."""
        provider = self._provider()
        assert provider is not None
        return provider_complete(provider, self.model(), on_done)

    async def prepare(self) -> None:
        """Once per session, for a separate summarizer model: ask the engine for its
        window (the running ladder budgets summaries by it); an unserved one falls back."""
        if self._probed or not self.separate:
            return
        self._probed = True
        provider = self._provider()
        assert provider is not None
        try:
            found = await probe_window(
                provider, self.agent.with_changes(model=self.agent.summarizer_model)
            )
        except ModelNotFound as exc:
            self.fall_back(exc)
            return
        except (ProviderError, ValueError) as exc:
            log.info("could not probe the summarizer's window: %s", exc)
            return
        if found.source != "fallback":
            self.window = found.window
            ladder = self._ladder()
            if ladder is not None:
                ladder.summarizer_window = found.window

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """One summary on the chosen model; a summarizer model the engine answers 404 for
        is dropped for the agent's own."""
        provider = self._provider()
        assert provider is not None
        model = self.model()
        try:
            return await self._summarize_with(provider, request, model)
        except ModelNotFound as exc:
            if model == self.agent.model:
                raise
            self.fall_back(exc)
        return await self._summarize_with(provider, request, self.agent.model)

    async def _summarize_with(
        self, provider: Provider, request: SummaryRequest, model: str
    ) -> SummaryResult:
        return await summarize(provider, self.agent, request, on_done=self._on_usage, model=model)
