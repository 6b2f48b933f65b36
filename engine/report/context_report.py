"""What the context rail, the `/context` overlay and `/usage` show, computed in one place.

The desktop draws these values and the headless output prints them; neither decides a
number. Everything that turns tokens and windows into something a person reads lives here:
the headline fill (the engine's own count while it still describes the history, an estimate
after the ladder rewrote it), the ladder's marks, the headroom before auto-compact, the
per-category breakdown, the prompt-cache shares ("0%" and "not reported" are different
answers), the per-request fill timeline with its clear, compaction and trim markers, the
user-visible 70% / 90% warnings, and the `/usage` rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from engine.context.budget import ContextBudget
from engine.context.constants import CONTEXT_CRITICAL_RATIO, CONTEXT_WARN_RATIO, REASON_MANUAL
from engine.context.notices import MECHANICAL_PHRASE, compaction_reason_line
from engine.messages import Message
from engine.prompt import ProjectInstructions, project_block
from engine.providers.cache_reuse import reuse_line
from engine.providers.sampling_source import SamplingPlan
from engine.report.cache_share import CacheShare
from engine.report.figures import format_tokens
from engine.report.mcp_rows import McpToolsReport
from engine.report.timeline import (  # noqa: F401 (the timeline's names, importable here too)
    MARKER_CLEAR,
    MARKER_COMPACTION,
    MARKER_TRIM,
    MARKERS,
    SavedMark,
    TimelineMarker,
    TimelinePoint,
    saved_marks,
    saved_timeline,
)
from engine.store.records import UsageSummary

# The timeline keeps this many of the most recent requests (the chart is small; the report
# travels in an event after every request).
TIMELINE_POINTS = 240

CATEGORY_SYSTEM = "System prompt"
CATEGORY_TOOLS = "Tool schemas"
CATEGORY_PROJECT = "Project context"
CATEGORY_MEMORY = "Memory"
CATEGORY_MESSAGES = "Messages"
CATEGORY_FRAMING = "Template framing"
TOOL_RESULTS_PREFIX = "Tool results: "

# What a price column says for engines that publish no price list (every local engine).
NO_PRICE = "(no published price)"
LOCAL_PRICE_NOTE = "local engines publish no price: nothing here is a bill"


# -- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    """One row of the breakdown. `tool` names the tool for a tool-results row."""

    name: str
    tokens: int
    tool: str | None = None


@dataclass(frozen=True)
class ContextReport:
    """The rail's and the overlay's numbers at one moment."""

    window: int | None
    source: str
    used: int
    estimated: bool  # the headline is Brim's estimate, not the engine's count
    warn_at: int = 0
    critical_at: int = 0
    compact_at: int = 0
    trim_at: int = 0
    categories: tuple[Category, ...] = ()
    cache_session: CacheShare | None = None  # None: no request measured yet
    cache_last: CacheShare | None = None
    this_process: bool = False  # resumed: the cache counters start where this process did
    timeline: tuple[TimelinePoint, ...] = ()
    markers: tuple[TimelineMarker, ...] = ()
    instructions: tuple[str, ...] = ()  # project instruction files loaded
    requests: int = 0  # requests measured in this conversation (the timeline may be shorter)
    taken_at: float = 0.0
    exact_breakdown: bool = False  # the categories come from the engine's own tokenizer
    # How Brim counts on this engine: "exact: …" (how) or "estimated (…): …" (why).
    counting: str = ""
    compact_tools: bool = False  # the tool schemas go out with compact descriptions
    mcp: McpToolsReport | None = None  # the MCP servers' tiers and what deferral saves
    # Which request `used` describes: "last request" (the engine's count of the request that
    # just landed, mid-run) or "next request" (what the history costs when sent now, while
    # an answer streams and whenever the agent is at rest).
    describes: str = "next request"
    streaming: bool = False  # `used` includes an answer still streaming
    # The sampler settings each answer is sampled with, and whose each is (the agent's, the
    # model's, the engine's, Brim's); None: no agent or engine behind this report.
    sampling: SamplingPlan | None = None
    # Whether the engine moves cached chunks to new positions, as its probe found (None: not
    # probed): where a compaction puts the checkpoint (engine/providers/cache_reuse.py).
    moved_cache_reuse: bool | None = None

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.window if self.window else 0.0

    @property
    def headroom(self) -> int:
        """Tokens available before auto-compact."""
        return max(0, self.compact_at - self.used) if self.window else 0

    @property
    def reserve(self) -> int:
        """The auto-compact reserve zone: from the compaction threshold to the window."""
        return max(0, (self.window or 0) - self.compact_at)

    @property
    def level(self) -> str:
        """ok | warn | critical, by the ladder's own marks."""
        if not self.window:
            return "ok"
        if self.used > self.critical_at:
            return "critical"
        if self.used > self.warn_at:
            return "warn"
        return "ok"

    def fill_line(self) -> str:
        if not self.window:
            return "Context: window not known yet"
        kind = " (estimated)" if self.estimated else ""
        return (
            f"Context {self.percent:.0f}% full{kind}: {format_tokens(self.used)} of "
            f"{format_tokens(self.window)} ({self.source}) · {self.describes}"
        )

    def headroom_line(self) -> str:
        if not self.window:
            return ""
        if self.compact_at and self.used >= self.compact_at:
            # Past the mark (a long answer cut at its cap): this is never sent as it stands.
            return "Past auto-compact: the next request is compacted before it is sent"
        return f"{self.headroom:,} tokens available before auto-compact"

    def sampling_line(self) -> str:
        """The sampling in force and whose each setting is ("" without an agent); a thinking
        model sampled greedily is warned about on the same line."""
        if self.sampling is None:
            return ""
        return " ".join([f"Sampling: {self.sampling.describe()}", *self.sampling.warnings()])

    def reuse_line(self) -> str:
        return reuse_line(self.moved_cache_reuse)

    def cache_lines(self) -> list[str]:
        """The prompt-cache lines; none before a request has been measured."""
        if self.cache_session is None:
            return []
        if not self.cache_session.reported and (
            self.cache_last is None or not self.cache_last.reported
        ):
            return ["Prompt cache: not reported"]
        scope = "this process" if self.this_process else "session"
        lines = [f"Prompt cache ({scope}): {self.cache_session.describe()}"]
        if self.cache_last is not None:
            lines.append(f"Prompt cache (last request): {self.cache_last.describe()}")
        return lines

    def lines(self) -> list[str]:
        """The report as text (the headless `/context` and a plain-text copy)."""
        out = [self.fill_line()]
        if self.window:
            out.append(
                f"warn at {format_tokens(self.warn_at)} · critical at "
                f"{format_tokens(self.critical_at)} · auto-compact at "
                f"{format_tokens(self.compact_at)} (reserve {format_tokens(self.reserve)})"
            )
            out.append(self.headroom_line())
        if self.counting:
            out.append(f"Counting: {self.counting}")
        if self.sampling is not None:
            out.append(self.sampling_line())
        out.extend(self.cache_lines())
        if self.window:
            out.append(self.reuse_line())
        for category in self.categories:
            name = category.name
            if name == CATEGORY_TOOLS and self.compact_tools:
                name += " (compact)"
            out.append(f"  {name:<32} {category.tokens:>9,}")
        if self.instructions:
            out.append("Project instructions: " + ", ".join(self.instructions))
        return out + (self.mcp.lines() if self.mcp is not None else [])


@dataclass(frozen=True)
class UsageRow:
    provider: str
    model: str
    requests: int
    prompt_tokens: int
    cached_tokens: int | None  # None: never reported for this model
    completion_tokens: int
    price: str = NO_PRICE

    def line(self) -> str:
        cached = ""
        if self.cached_tokens is not None:
            cached = f" ({format_tokens(self.cached_tokens)} cached)"
        return (
            f"{self.requests} req · {format_tokens(self.prompt_tokens)} in{cached} · "
            f"{format_tokens(self.completion_tokens)} out {self.price}"
        )

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"


@dataclass(frozen=True)
class UsageReport:
    """`/usage`: per provider and model, then a total. Sums over every request the
    conversation made (summaries included), not the window."""

    rows: tuple[UsageRow, ...]
    total: UsageRow
    note: str = LOCAL_PRICE_NOTE
    # The total by kind of request ("chat", "summary", "memory"), each row's `model` the
    # kind; shown when more than the agent's own requests were made.
    purposes: tuple[UsageRow, ...] = ()

    @property
    def shown_purposes(self) -> tuple[UsageRow, ...]:
        if all(row.model == "chat" for row in self.purposes):
            return ()
        return self.purposes

    def lines(self) -> list[str]:
        out = ["session usage"]
        out.extend(f"{row.label} {row.line()}" for row in self.rows)
        out.append(f"total {self.total.line()}")
        out.extend(f"  {row.model} {row.line()}" for row in self.shown_purposes)
        out.append(self.note)
        return out


def _usage_row(summary: UsageSummary) -> UsageRow:
    return UsageRow(
        provider=summary.provider,
        model=summary.model,
        requests=summary.requests,
        prompt_tokens=summary.prompt_tokens,
        cached_tokens=summary.cached_tokens,
        completion_tokens=summary.completion_tokens,
    )


def build_usage_report(
    summaries: Iterable[UsageSummary], purposes: Iterable[UsageSummary] = ()
) -> UsageReport:
    """`summaries` per provider and model; `purposes` the same requests per kind."""
    rows = tuple(_usage_row(s) for s in summaries)
    cached = [r.cached_tokens for r in rows if r.cached_tokens is not None]
    total = UsageRow(
        provider="",
        model="total",
        requests=sum(r.requests for r in rows),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        cached_tokens=sum(cached) if cached else None,
        completion_tokens=sum(r.completion_tokens for r in rows),
    )
    return UsageReport(rows, total, purposes=tuple(_usage_row(s) for s in purposes))


# -- the breakdown --------------------------------------------------------------------------


def categories(
    messages: Sequence[Message],
    *,
    count_message: Callable[[Message], int],
    count_text: Callable[[str], int],
    schema_tokens: int = 0,
    framing_tokens: int = 0,
    instructions: Sequence[ProjectInstructions] = (),
    memory_texts: Sequence[str] = (),
) -> tuple[Category, ...]:
    """Where the request's tokens go, largest tool first.

    The system prompt is one message, so its parts are measured as text and taken out of
    it: the project instruction blocks and any memory text found inside it. Memory carried
    as its own message (meta `memory`) counts as memory too. Summaries count as messages.
    """
    system = project = memory = convo = 0
    by_tool: dict[str, int] = {}
    for message in messages:
        if message.is_notice:
            continue
        tokens = count_message(message)
        if message.meta_value("memory"):
            memory += tokens
        elif message.role == "system" and message.kind != "summary":
            inside = 0
            for item in instructions:
                block = project_block(item)
                if block in message.content:
                    part = count_text(block)
                    project += part
                    inside += part
            for text in memory_texts:
                if text and text in message.content:
                    part = count_text(text)
                    memory += part
                    inside += part
            system += max(0, tokens - inside)
        elif message.role == "tool":
            name = message.name or "tool"
            by_tool[name] = by_tool.get(name, 0) + tokens
        else:
            convo += tokens
    rows = [
        Category(CATEGORY_SYSTEM, system),
        Category(CATEGORY_TOOLS, schema_tokens),
        Category(CATEGORY_PROJECT, project),
        Category(CATEGORY_MEMORY, memory),
        Category(CATEGORY_MESSAGES, convo),
    ]
    rows.extend(
        Category(TOOL_RESULTS_PREFIX + name, tokens, tool=name)
        for name, tokens in sorted(by_tool.items(), key=lambda item: (-item[1], item[0]))
    )
    if framing_tokens > 0:
        rows.append(Category(CATEGORY_FRAMING, framing_tokens))
    return tuple(rows)


# -- what happened, request by request ------------------------------------------------------


@dataclass
class RequestTracker:
    """The conversation's requests as they land, and the ladder's acts between them.

    The headline fill is the engine's own count of the last request while that still
    describes the history; once the ladder rewrites it (clearing, compaction, trimming) the
    count is stale and the report falls back to an estimate until the next request lands.
    """

    points: list[TimelinePoint] = field(default_factory=list)
    markers: list[TimelineMarker] = field(default_factory=list)
    requests: int = 0
    session_prompt: int = 0  # over every request that landed
    session_cached: int = 0
    any_reported: bool = False
    last_prompt: int | None = None
    last_cached: int | None = None
    last_measured: bool = False
    fresh: bool = False  # the last point still describes the live history
    resumed: bool = False
    acts_here: int = 0  # requests and ladder acts seen live since the reset or restore
    sent_here: int = 0  # requests landed since the reset or restore (this process, this history)
    streaming: tuple[int, int] | None = None  # (prompt, answer so far) of the request in flight
    _pending_usage: tuple[int | None, int | None] | None = None

    def on_usage(self, prompt_tokens: int | None, cached_tokens: int | None) -> None:
        self._pending_usage = (prompt_tokens, cached_tokens)

    def on_context(self, used: int, window: int, *, estimated: bool, at: float = 0.0) -> None:
        """A request landed (its usage, if any, arrived just before)."""
        self.acts_here += 1
        self.sent_here += 1
        self.requests += 1
        prompt, cached = self._pending_usage or (None, None)
        self._pending_usage = None
        at = at or time.time()
        self.points.append(TimelinePoint(self.requests, used, window, estimated, at, cached))
        del self.points[:-TIMELINE_POINTS]
        self.streaming = None
        self.last_measured = True
        self.last_prompt = prompt if prompt is not None else used
        self.last_cached = cached
        # The session share is cached / prompt over every request sent (docs/design/context.md): a
        # request whose route dropped its cache counter still sent its prompt.
        self.session_prompt += self.last_prompt
        if cached is not None:
            self.any_reported = True
            self.session_cached += cached
        self.fresh = not estimated

    def on_stream(self, prompt_tokens: int, completion_tokens: int) -> None:
        """An answer is streaming: the gauge counts it as it grows."""
        self.streaming = (prompt_tokens, completion_tokens)

    def settle(self) -> None:
        """The run is over (finished, cancelled or failed): from now on the gauge describes
        the next request, not the last one (its answer, a cancelled partial and any tool
        result since are part of what will be sent)."""
        self.fresh = False
        self.streaming = None

    def on_marker(self, kind: str, detail: str = "", ref: str = "") -> None:
        self.acts_here += 1
        self.markers.append(TimelineMarker(self.requests, kind, detail, ref))
        oldest = self.points[0].request - 1 if self.points else self.requests
        self.markers = [m for m in self.markers if m.after >= oldest]
        self.fresh = False

    def reset(self) -> None:
        """A different conversation: nothing measured yet."""
        self.points.clear()
        self.markers.clear()
        self.requests = 0
        self.session_prompt = self.session_cached = 0
        self.any_reported = False
        self.last_prompt = self.last_cached = None
        self.last_measured = False
        self.fresh = False
        self.resumed = False
        self.acts_here = 0
        self.sent_here = 0
        self.streaming = None
        self._pending_usage = None

    def restore(
        self, points: Sequence[TimelinePoint], markers: Sequence[TimelineMarker], requests: int
    ) -> None:
        """A saved conversation opened again: its timeline as the store kept it, so the chart
        covers the whole conversation and the next request is numbered after the saved ones.

        Only the timeline is restored. The prompt-cache counters stay this process's (a
        resumed history's counters start where this process did, and the line says
        "this process"), and the headline stays an estimate until a request lands here."""
        self.reset()
        self.resumed = True
        self.requests = requests
        self.points = list(points)[-TIMELINE_POINTS:]
        oldest = self.points[0].request - 1 if self.points else requests
        self.markers = [m for m in markers if m.after >= oldest]

    def last_used(self) -> int | None:
        """The engine's count of the last request, while it still describes the history."""
        if not self.fresh or not self.points:
            return None
        return self.points[-1].used

    def cache_shares(self) -> tuple[CacheShare | None, CacheShare | None]:
        if not self.last_measured:
            return None, None
        # The first request of this history in this process: nothing sent before it here
        # could be cached (a reopened conversation's engine cache held another one).
        first = self.sent_here <= 1
        session = CacheShare(self.session_cached, self.session_prompt, self.any_reported, first)
        reported = self.last_cached is not None
        last = CacheShare(self.last_cached or 0, self.last_prompt or 0, reported, first)
        return session, last


def build_context_report(
    *,
    budget: ContextBudget | None,
    source: str,
    estimate: int,
    tracker: RequestTracker,
    categories: Sequence[Category] = (),
    instructions: Sequence[str] = (),
    exact_breakdown: bool = False,
    counting: str = "",
    compact_tools: bool = False,
    exact_estimate: bool = False,
    mcp: McpToolsReport | None = None,
    sampling: SamplingPlan | None = None,
    moved_cache_reuse: bool | None = None,
) -> ContextReport:
    """The report for the current history. `estimate` is Brim's count of the request the
    history would make now (overhead included; `exact_estimate`: by the engine's own
    tokenizer); the engine's count of the last request wins while a run is on and nothing
    has changed since it landed."""
    reported = tracker.last_used()
    used = reported if reported is not None else estimate
    describes = "last request" if reported is not None else "next request"
    streaming = tracker.streaming is not None
    if tracker.streaming is not None:
        used = sum(tracker.streaming)
        describes = "next request"
    session, last = tracker.cache_shares()
    common = {
        "source": source,
        "used": used,
        "estimated": streaming or (reported is None and not exact_estimate),
        "describes": describes,
        "streaming": streaming,
        "categories": tuple(categories),
        "cache_session": session,
        "cache_last": last,
        "this_process": tracker.resumed,
        "timeline": tuple(tracker.points),
        "markers": tuple(tracker.markers),
        "instructions": tuple(instructions),
        "requests": tracker.requests,
        "taken_at": time.time(),
        "exact_breakdown": exact_breakdown,
        "counting": counting,
        "compact_tools": compact_tools,
        "mcp": mcp,
        "sampling": sampling,
        "moved_cache_reuse": moved_cache_reuse,
    }
    if budget is None:
        return ContextReport(window=None, **common)  # type: ignore[arg-type]
    return ContextReport(
        window=budget.window,
        warn_at=budget.warn_threshold,
        critical_at=budget.critical_threshold,
        compact_at=budget.compact_threshold,
        trim_at=budget.trim_threshold,
        **common,  # type: ignore[arg-type]
    )


# -- the user-visible 70% / 90% warnings ----------------------------------------------------


@dataclass
class FillWarnings:
    """Says once when a request crosses 70% and once when it crosses 90% of the window;
    re-armed when the fill drops back under the mark (after a compaction), so the next
    climb warns again. The model's own nudges are separate and never shown."""

    warned: bool = False
    critical: bool = False

    def check(self, used: int, budget: ContextBudget) -> str | None:
        if used <= budget.warn_threshold:
            self.warned = self.critical = False
            return None
        if used <= budget.critical_threshold:
            self.critical = False
        percent = round(100 * used / budget.window)
        sizes = f"({used:,} of {budget.window:,} tokens)"
        if used > budget.critical_threshold and not self.critical:
            self.critical = self.warned = True
            return (
                f"Context window {percent}% full {sizes}: past the "
                f"{round(CONTEXT_CRITICAL_RATIO * 100)}% mark, nearly out of room"
            )
        if not self.warned:
            self.warned = True
            headroom = budget.headroom(used)
            compact = round(100 * budget.compact_threshold / budget.window)
            room = (
                f"{headroom:,} tokens from here"
                if headroom > 0
                else "the next request is compacted before it is sent"
            )
            return (
                f"Context window {percent}% full {sizes}: past the "
                f"{round(CONTEXT_WARN_RATIO * 100)}% mark; auto-compact at {compact}%, {room}"
            )
        return None


# -- the compaction row in the transcript ---------------------------------------------------


def compaction_row(
    messages_before: int,
    messages_after: int,
    used: int,
    window: int,
    reason: str,
    *,
    replaced: int,
    asked_by_agent: bool = False,
    summary: str = "",
) -> str:
    """The compaction receipt's two lines (docs/design/context.md): `auto-compacted 84 -> 31
    messages (ctx 96K/128K)` and why, `compacted 60 messages into a summary: …`, where 60 is
    `replaced`, the messages the checkpoint took the place of as Show / Restore lists them;
    a third when no summarizer answer survived (`summary` "mechanical") says what the
    checkpoint holds instead.
    `used` is the context before compacting. A `/compact` is not "auto"."""
    verb = "compacted" if reason == REASON_MANUAL else "auto-compacted"
    line = (
        f"{verb} {messages_before} -> {messages_after} messages "
        f"(ctx {format_tokens(used)}/{format_tokens(window)})"
    )
    row = line + "\n" + compaction_reason_line(replaced, reason, asked_by_agent=asked_by_agent)
    return row + "\n" + MECHANICAL_PHRASE if summary == "mechanical" else row
