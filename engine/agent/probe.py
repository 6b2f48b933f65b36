"""What the agent editor's Probe button shows: the engine's answer next to the agent's settings.

A user pinning `num_ctx` needs to know, before saving, whether the engine will honour it. So
the probe asks the engine once and resolves the window twice through
`engine/window/resolution.py` — for the agent as saved and for the edits in the dialog — and
hands back plain data: every figure side by side and every warning that applies. The rules live
in `resolve_window`; this module only chooses what to ask and how to lay the answer out, so the
editor, `brim probe` and the running session can never disagree about a window.

An engine that cannot be reached is an answer too (`ProbeFailure`), never an exception: the
dialog shows it in place of the table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from engine.catalog import catalog_window
from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.fit.discovery import gguf_files, model_folders
from engine.mcp.listing_cache import ListingCache
from engine.mcp.probe import ServerTest, check_mcp_server, tool_calling_warnings
from engine.providers import bundled_models
from engine.providers.base import EngineReport, ModelInfo, Provider
from engine.providers.embedded import EmbeddedProvider
from engine.providers.errors import ProviderError
from engine.providers.sampling import Sampling
from engine.providers.sampling_source import SamplingPlan
from engine.session import provider_for
from engine.tokens import counter_for
from engine.window.resolution import WindowResolution, resolve_window

log = logging.getLogger(__name__)

T = TypeVar("T")

# Each engine call already gives up after its own probe timeout; this bounds the whole probe
# (several calls) so the dialog's busy indicator always ends.
PROBE_DEADLINE_S = 45.0

EMBEDDED_NOT_PROBED = (
    "The embedded engine is not started again to probe it (that would load the model a "
    "second time); the figures come from the running conversation where it runs this model, "
    "and the window is allocated when the agent is saved."
)


@dataclass(frozen=True)
class ProbeRow:
    """One line of the side-by-side table. `saved` is None when there is no saved column."""

    key: str
    label: str
    saved: int | str | None
    edited: int | str | None
    unset: str  # what an empty cell says ("none", "not reported")


@dataclass(frozen=True)
class ProbeComparison:
    """The engine's answer for the edited agent, and for the saved one when it runs the same
    engine and model (else `saved` is None: that would be another engine's answer)."""

    provider: str
    base_url: str | None
    edited: WindowResolution
    saved: WindowResolution | None
    loaded: bool | None  # Ollama: the model is in memory now; None where it does not say
    setting_warnings: tuple[str, ...] = ()  # valid settings that will not do what they seem
    notes: tuple[str, ...] = ()  # how the figures were obtained, when not simply asked
    # What each sampling setting left blank would be, and whose (the model's, the engine's,
    # Brim's); None where the engine was not asked.
    blank_sampling: SamplingPlan | None = None

    @property
    def window(self) -> int:
        return self.edited.window

    @property
    def source(self) -> str:
        return self.edited.source

    @property
    def warnings(self) -> list[str]:
        """Every warning for the edited agent: the window's, then the settings'."""
        return [*self.edited.warnings, *self.setting_warnings]

    def rows(self) -> list[ProbeRow]:
        """The table: what the engine serves, the training length, the pin, the ceiling, the
        effective window and its source (and the slots, for llama-server)."""
        s, e = self.saved, self.edited
        served_unset = "not loaded" if self.loaded is False else "not reported"
        rows = [
            ProbeRow(
                "served",
                "Served by the engine now",
                s.served if s else None,
                e.served,
                served_unset,
            ),
            ProbeRow(
                "model_max",
                "Model's training length",
                s.model_max if s else None,
                e.model_max,
                "not reported",
            ),
            ProbeRow("pinned", "Pin (num_ctx)", s.pinned if s else None, e.pinned, "none"),
            ProbeRow(
                "ceiling",
                "Ceiling (max_context_tokens)",
                s.ceiling if s else None,
                e.ceiling,
                "none",
            ),
            ProbeRow("window", "Effective window", s.window if s else None, e.window, "—"),
            ProbeRow("source", "Window source", s.source if s else None, e.source, "—"),
        ]
        if e.slots is not None or (s is not None and s.slots is not None):
            rows.append(
                ProbeRow("slots", "Server slots", s.slots if s else None, e.slots, "not reported")
            )
        return rows


@dataclass(frozen=True)
class ProbeFailure:
    """The engine could not answer: `kind` as in the headless error event, `message` for
    the user (it names the engine and its URL)."""

    kind: str
    message: str
    provider: str
    base_url: str | None


ProbeOutcome = ProbeComparison | ProbeFailure


def same_engine(a: AgentConfig, b: AgentConfig) -> bool:
    """Both agents would get the same answer from a probe: one engine, one model."""
    return (a.provider, a.effective_base_url, a.model) == (
        b.provider,
        b.effective_base_url,
        b.model,
    )


def resolve_for(report: EngineReport, agent: AgentConfig) -> WindowResolution:
    """The window `agent` would run with, given the engine's report."""
    return resolve_window(
        report,
        pinned=agent.num_ctx,
        ceiling=agent.max_context_tokens,
        catalog_max=catalog_window(report.model or agent.model),
    )


def compare(
    report: EngineReport,
    edited: AgentConfig,
    saved: AgentConfig | None = None,
    *,
    notes: tuple[str, ...] = (),
    engine: Provider | None = None,
) -> ProbeComparison:
    """Lay one engine report out for the edited agent and (same engine) the saved one;
    `engine`, the provider that made the report, says whose sampling applies."""
    resolution = resolve_for(report, edited)
    mcp = tool_calling_warnings(edited.mcp, resolution.tool_calls)
    sampled = engine.sampling_plan(edited.model, edited.sampling) if engine else None
    return ProbeComparison(
        provider=edited.provider,
        base_url=edited.effective_base_url,
        edited=resolution,
        saved=resolve_for(report, saved)
        if saved is not None and same_engine(saved, edited)
        else None,
        loaded=report.loaded,
        setting_warnings=(*edited.warnings(), *mcp, *(sampled.warnings() if sampled else ())),
        notes=notes,
        blank_sampling=engine.sampling_plan(edited.model, Sampling()) if engine else None,
    )


def _embedded_report(agent: AgentConfig, live: WindowResolution | None) -> EngineReport:
    """What is known about the embedded engine without loading the model again: the training
    length the running conversation measured, nothing about a window not yet allocated."""
    model_max = live.model_max if live is not None and live.provider == "embedded" else None
    return EngineReport(
        provider="embedded", model=agent.model, window_rule="allocated", model_max=model_max
    )


async def probe_agent(
    edited: AgentConfig,
    saved: AgentConfig | None = None,
    *,
    provider: Provider | None = None,
    live: WindowResolution | None = None,
    deadline_s: float = PROBE_DEADLINE_S,
) -> ProbeOutcome:
    """Ask the edited agent's engine what it serves and compare. Never raises for an engine
    fault. `provider`: talk through this one (left open) instead of a fresh one (closed
    after). `live`: the running conversation's resolution, used for the embedded engine."""
    if edited.provider == "embedded":
        report = _embedded_report(edited, live)
        try:  # the GGUF's own sampling is read from its header, no model loaded
            embedded: Provider | None = EmbeddedProvider(model_path=edited.model or None)
        except Exception:
            embedded = None
        return compare(report, edited, saved, notes=(EMBEDDED_NOT_PROBED,), engine=embedded)

    async def ask(p: Provider) -> tuple[EngineReport, Provider]:
        return await p.report(edited.model), p

    result = await _with_engine(edited, provider, ask, deadline_s)
    if isinstance(result, ProbeFailure):
        return result
    return compare(result[0], edited, saved, engine=result[1])


async def list_agent_models(
    agent: AgentConfig,
    *,
    provider: Provider | None = None,
    deadline_s: float = PROBE_DEADLINE_S,
) -> list[ModelInfo] | ProbeFailure:
    """The models the agent's engine offers, for the editor's model picker. The embedded
    engine runs a file: the bundled chat models installed here (not a base model), then by
    path the GGUF files that other local-model tools keep (LM Studio, GPT4All, Jan,
    llama.cpp's and Hugging Face's caches, as `brim fit --discover` finds them), none of
    them opened or loaded."""
    if agent.provider == "embedded":
        bundled = [ModelInfo(id=m.name) for m in bundled_models.chat_models()]
        found = await asyncio.to_thread(gguf_files, model_folders())
        return bundled + [ModelInfo(id=str(path)) for path in found]

    async def ask(p: Provider) -> list[ModelInfo]:
        return await p.list_models()

    return await _with_engine(agent, provider, ask, deadline_s)


async def _with_engine(
    agent: AgentConfig,
    provider: Provider | None,
    ask: Callable[[Provider], Awaitable[T]],
    deadline_s: float,
) -> T | ProbeFailure:
    base_url = agent.effective_base_url

    def failure(kind: str, message: str) -> ProbeFailure:
        return ProbeFailure(kind, message, agent.provider, base_url)

    own = provider is None
    try:
        engine = provider if provider is not None else provider_for(agent)
    except Exception as exc:  # a provider that cannot even be built: say why
        return failure("startup", f"Cannot talk to {agent.provider} at {base_url}: {exc}")
    try:
        return await asyncio.wait_for(ask(engine), deadline_s)
    except ProviderError as exc:
        return failure(exc.kind, exc.message)
    except TimeoutError:
        return failure(
            "timeout", f"{agent.provider} at {base_url} did not answer within {deadline_s:g} s."
        )
    except Exception as exc:  # an engine bug must not become a traceback in a dialog
        log.exception("probing %s at %s failed", agent.provider, base_url)
        return failure("internal", f"Probing {agent.provider} at {base_url} failed: {exc}")
    finally:
        if own:
            try:
                await engine.aclose()
            except Exception:
                log.debug("closing the probe's provider failed", exc_info=True)


async def check_agent_mcp_server(
    agent: AgentConfig, server: McpServer, listings_dir: Path | None = None
) -> ServerTest:
    """The editor's Test of one of `agent`'s MCP servers: its schemas' costs counted as the
    agent's engine counts them (o200k when the engine cannot be reached or cannot count;
    the answer's `counting` says which), its listing kept in `listings_dir`, where the
    agent's conversations read it."""
    listings = ListingCache(listings_dir) if listings_dir is not None else None
    try:
        provider = provider_for(agent)
    except Exception:  # an engine that cannot even be built still lets the server be tested
        log.info("testing %s with o200k counts: no %s provider", server.name, agent.provider)
        return await check_mcp_server(server, None, listings)
    try:
        return await check_mcp_server(server, counter_for(provider, agent.model), listings)
    finally:
        try:
            await provider.aclose()
        except Exception:
            log.debug("closing the provider after an MCP test failed", exc_info=True)
