"""The agent loop: prepare the request on the ladder, stream the answer, run the tools it
asks for, feed the results back, and stop on a final answer, a cancel or the iteration cap.

One call of `run_turn` is one user turn. The loop owns no history: it reads the
conversation through `Conversation` and hands every new message (and every rewrite the
ladder makes) back through it, so nothing reaches the model before it is persisted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.config import AgentConfig
from engine.context import ContextManager, IterationPressure, LadderOutcome
from engine.context.constants import (
    REASON_MANUAL,
    REASON_SESSION_BUDGET,
)
from engine.events import (
    TOOL_PREVIEW_CHARS,
    AnswerProgressEvent,
    ClearEvent,
    ContextEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    StateEvent,
    StepEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageEvent,
)
from engine.messages import (
    Message,
    ToolCall,
    alternating,
    assistant,
    model_messages,
    notice,
    tool_result,
)
from engine.providers.base import (
    ChatOptions,
    Provider,
    StreamDone,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.errors import ContextOverflow, ProviderError, ToolsUnsupported
from engine.store import Store
from engine.tokens import TokenCounter, detect_silent_truncation
from engine.window import WindowResolution

log = logging.getLogger(__name__)

# How often a streaming answer's growth is reported to the gauge (seconds): often enough
# to see it move, rarely enough that headless output is not flooded with reports.
PROGRESS_EVERY_S = 0.25


class Conversation(Protocol):
    """The session's side of the loop: the live history and the two ways to change it."""

    def live(self) -> list[Message]: ...

    def append(self, message: Message) -> None: ...

    def replace(self, model_history: list[Message]) -> None: ...


class ToolRunner(Protocol):
    """Runs the tools the model asks for (engine/tools); None: the agent has no tools."""

    def schemas(self) -> list[dict[str, Any]]: ...

    async def run(self, call: ToolCall) -> ToolRun: ...


@dataclass
class ToolRun:
    content: str
    chars: int
    truncated: bool
    is_error: bool = False


@dataclass
class TurnOutcome:
    text: str
    prompt_tokens: int
    completion_tokens: int
    elapsed_s: float
    finish_reason: str | None
    iterations: int = 1
    error: ProviderError | None = None
    stopped: str | None = None  # why the loop stopped early: "iteration_limit", "budget"


@dataclass
class _Answer:
    text: str
    calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: str | None
    first_token: float | None


@dataclass
class _Totals:
    prompt: int = 0
    completion: int = 0
    eval_s: float = 0.0
    generating_s: float = 0.0
    spent: int = 0  # tokens this run has cost, for the per-run budget
    last_text: str = ""
    finish: str | None = None
    calls_made: list[str] = field(default_factory=list)


class AgentLoop:
    def __init__(
        self,
        *,
        agent: AgentConfig,
        provider: Provider,
        window: WindowResolution,
        counter: TokenCounter,
        context: ContextManager,
        sink: Callable[[Event], None],
        conversation: Conversation,
        store: Store | None = None,
        conversation_id: str = "",
        tools: ToolRunner | None = None,
    ) -> None:
        self.agent = agent
        self.provider = provider
        self.window = window
        self.counter = counter
        self.context = context
        self.sink = sink
        self.conversation = conversation
        self.store = store
        self.conversation_id = conversation_id
        self.tools = tools
        self.pressure = IterationPressure(agent.max_iterations)

    # -- requests ------------------------------------------------------------------------

    def _go_without_tools(self, refusal: ToolsUnsupported) -> None:
        """The engine refused the tools: this conversation goes on without them (the same
        request again, tool-less), and the user learns why and how to get them back."""
        self.tools = None
        self._notice(
            f"{refusal.message}. Brim sends no tools for the rest of this conversation, so the "
            f"agent can neither read files nor run commands; to give it tools, {refusal.hint}.",
            "warning",
        )

    def _schemas(self) -> list[dict[str, Any]]:
        return self.tools.schemas() if self.tools is not None else []

    def _options(self) -> ChatOptions:
        return ChatOptions(
            max_tokens=self.agent.max_tokens,
            temperature=self.agent.temperature,
            # Ollama takes its window from the request; the same value every time, or it reloads.
            num_ctx=self.agent.num_ctx if self.provider.kind == "ollama" else None,
            tools=self._schemas(),
        )

    def overhead_tokens(self) -> int:
        """What a request costs beyond its messages: tool schemas and the template's framing."""
        schemas = self._schemas()
        return self.counter.count_tools(schemas) + self.counter.request_overhead(bool(schemas))

    def _budget(self) -> int | None:
        limit = self.agent.budget_max_tokens
        if limit == 0:
            return None
        return limit if limit is not None else self.window.window

    # -- the turn ------------------------------------------------------------------------

    async def run_turn(self) -> TurnOutcome:
        started = time.monotonic()
        totals = _Totals()
        iterations = 0
        overflow_retried = False
        budget_compacted = False
        cap = self.agent.max_iterations
        stopped: str | None = None
        # Each turn is a run of its own (iterations count from 0): its ramp warns afresh,
        # also after the user typed 'continue' at the cap.
        self.pressure.reset()
        while True:
            if cap is not None and iterations >= cap:
                self._notice(
                    f"Iteration limit reached ({iterations}/{cap}): the run stops here. "
                    "Type 'continue' to keep it going.",
                    "warning",
                )
                stopped = "iteration_limit"
                break
            iterations += 1
            pressure = self.pressure.check(iterations)
            if pressure:
                self._notice(pressure, "warning")
            overhead = self.overhead_tokens()
            prepared = await self.context.prepare(
                self.conversation.live(),
                overhead_tokens=overhead,
                iterations_used=iterations,
                max_iterations=cap,
            )
            if prepared.changed:
                self.conversation.replace(prepared.history)
            if prepared.cleared:
                self.sink(ClearEvent(results_cleared=prepared.cleared))
            self.sink(StepEvent(iterations, cap))
            self.sink(StateEvent("streaming"))
            request = alternating(prepared.request)
            counted = self.counter.count_request(request, self._schemas())
            sent_at = time.time()
            try:
                answer = await self._stream(request, counted)
            except ContextOverflow as exc:
                if overflow_retried or not await self._recover_overflow(exc, overhead):
                    self.sink(ErrorEvent(exc.kind, _overflow_failure(exc)))
                    return self._outcome(totals, started, iterations, error=exc)
                overflow_retried = True
                iterations -= 1
                continue
            except ToolsUnsupported as exc:
                if self.tools is None:  # nothing to take away: the refusal is the answer
                    self.sink(ErrorEvent(exc.kind, exc.message))
                    return self._outcome(totals, started, iterations, error=exc)
                self._go_without_tools(exc)
                iterations -= 1
                continue
            except ProviderError as exc:
                self.sink(ErrorEvent(exc.kind, exc.message))
                return self._outcome(totals, started, iterations, error=exc)

            self.conversation.append(assistant(answer.text, answer.calls))
            truncated = self._land(request, counted, answer, totals)
            if not truncated:
                # What a compaction on the same model replays: the engine holds it cached.
                tokens = answer.usage.prompt_tokens or counted
                self.context.sent(request, self._schemas(), tokens, sent_at)
            if truncated and not overflow_retried:
                # Ollama cut the prompt silently: the same as an overflow, so compact now.
                overflow_retried = True
                await self._recover_overflow(None, overhead)
            if not answer.calls:
                break
            await self._run_tools(answer.calls)
            if self._over_budget(totals):
                if budget_compacted:
                    self._notice(_budget_stop_text(self._budget() or 0), "warning")
                    stopped = "budget"
                    break
                budget_compacted = True
                await self.compact(REASON_SESSION_BUDGET)
                totals.spent = 0

        trimmed = self.context.after_response(
            self.conversation.live(), overhead_tokens=self.overhead_tokens()
        )
        if trimmed != model_messages(self.conversation.live()):
            self.conversation.replace(trimmed)
        outcome = self._outcome(totals, started, iterations, stopped=stopped)
        self._record_receipt(outcome, totals)
        return outcome

    async def compact(self, reason: str = REASON_MANUAL) -> bool:
        """`/compact`, the summarize_context tool and a used-up budget: the ladder's path."""
        outcome = await self.compact_outcome(reason)
        return outcome.compaction is not None and outcome.compaction.ok

    async def compact_outcome(self, reason: str = REASON_MANUAL) -> LadderOutcome:
        """The same, with what it did (for the summarize_context tool's answer)."""
        self.sink(StateEvent("compacting"))
        outcome = await self.context.compact(
            self.conversation.live(), reason=reason, overhead_tokens=self.overhead_tokens()
        )
        if outcome.history != model_messages(self.conversation.live()):
            self.conversation.replace(outcome.history)
        return outcome

    async def _recover_overflow(self, exc: ContextOverflow | None, overhead: int) -> bool:
        if exc is not None and exc.window and exc.window < self.window.window:
            # The engine told us its real window: account against it from now on.
            self.context.set_window(exc.window)
        self.sink(StateEvent("compacting"))
        outcome = await self.context.on_overflow(
            self.conversation.live(), overhead_tokens=overhead, rejected=exc is not None
        )
        if outcome.history != model_messages(self.conversation.live()):
            self.conversation.replace(outcome.history)
        return outcome.shrank

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        for call in calls:
            self.sink(ToolCallEvent(id=call.id, name=call.name, arguments=call.arguments))
            if self.tools is None:
                run = ToolRun("Error: this agent has no tools.", 0, False, True)
            else:
                try:
                    run = await self.tools.run(call)
                except asyncio.CancelledError:
                    self.conversation.append(tool_result(call, "Cancelled by the user."))
                    raise
                except Exception as exc:  # a tool bug must not kill the turn
                    log.exception("tool %s failed", call.name)
                    run = ToolRun(f"Error: the tool failed: {exc}", 0, False, True)
            self.conversation.append(tool_result(call, run.content))
            self.sink(
                ToolResultEvent(
                    id=call.id,
                    name=call.name,
                    chars=run.chars,
                    truncated=run.truncated,
                    preview=run.content[:TOOL_PREVIEW_CHARS],
                    is_error=run.is_error,
                )
            )

    async def _stream(self, request: list[Message], counted: int = 0) -> _Answer:
        parts: list[str] = []
        calls: tuple[ToolCall, ...] = ()
        usage = Usage()
        finish: str | None = None
        first_token: float | None = None
        reported = 0.0
        try:
            async for item in self.provider.stream_chat(self.agent.model, request, self._options()):
                if isinstance(item, TextDelta):
                    if first_token is None:
                        first_token = time.monotonic()
                    parts.append(item.text)
                    self.sink(DeltaEvent(item.text))
                    now = time.monotonic()
                    if now - reported >= PROGRESS_EVERY_S:
                        reported = now
                        self._progress(counted, parts)
                elif isinstance(item, ToolCallsReady):
                    calls = item.calls
                elif isinstance(item, StreamDone):
                    usage, finish = item.usage, item.finish_reason
        except (asyncio.CancelledError, ProviderError):
            # Keep what the user already saw: a partial answer is saved, marked as such.
            if parts:
                self.conversation.append(assistant("".join(parts)).with_meta(partial=True))
            raise
        return _Answer("".join(parts), calls, usage, finish, first_token)

    def _progress(self, counted: int, parts: list[str]) -> None:
        """The gauge's view of a streaming answer: the prompt plus the answer so far."""
        self.sink(
            AnswerProgressEvent(
                prompt_tokens=counted,
                completion_tokens=self.counter.count_text("".join(parts)),
                window=self.context.budget.window,
            )
        )

    def _land(self, request: list[Message], counted: int, answer: _Answer, totals: _Totals) -> bool:
        """A request landed: report usage and fill, calibrate, and look for a silent cut.
        Returns True when the engine truncated the prompt without saying so."""
        usage = answer.usage
        totals.prompt = usage.prompt_tokens or counted
        totals.completion += usage.completion_tokens or 0
        totals.spent += (usage.prompt_tokens or counted) + (usage.completion_tokens or 0)
        totals.last_text = answer.text
        totals.finish = answer.finish_reason
        if usage.eval_s:
            totals.eval_s += usage.eval_s
        elif answer.first_token is not None:
            totals.generating_s += time.monotonic() - answer.first_token
        self.sink(
            UsageEvent(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
            )
        )
        used = usage.prompt_tokens if usage.prompt_tokens is not None else counted
        window = self.context.budget.window
        self.sink(
            ContextEvent(
                used=used,
                window=window,
                percent=round(100.0 * used / window, 1) if window else 0.0,
                source=self.window.source,
                estimated=usage.prompt_tokens is None,
            )
        )
        self._record_usage(usage)
        if usage.prompt_tokens is None:
            return False
        # Only Ollama cuts a prompt silently; other engines reject it with an error.
        if self.provider.kind == "ollama" and detect_silent_truncation(
            counted, usage.prompt_tokens, window=window
        ):
            self._notice(
                f"The engine truncated the prompt: Brim sent ~{counted:,} tokens but the engine "
                f"read only {usage.prompt_tokens:,}. It serves a smaller window than {window:,}; "
                "pin num_ctx in the agent so Brim accounts against the real one.",
                "warning",
            )
            return True
        self.counter.calibrate(request, self._schemas(), usage.prompt_tokens)
        return False

    def _over_budget(self, totals: _Totals) -> bool:
        budget = self._budget()
        return budget is not None and totals.spent >= budget

    def _notice(self, text: str, level: str = "info") -> None:
        self.conversation.append(notice(text, level))
        self.sink(NoticeEvent(level, text))

    def _outcome(
        self,
        totals: _Totals,
        started: float,
        iterations: int,
        *,
        error: ProviderError | None = None,
        stopped: str | None = None,
    ) -> TurnOutcome:
        return TurnOutcome(
            totals.last_text,
            totals.prompt,
            totals.completion,
            time.monotonic() - started,
            totals.finish,
            iterations=iterations,
            error=error,
            stopped=stopped,
        )

    def _record_usage(self, usage: Usage) -> None:
        if self.store is None:
            return
        try:
            self.store.record_usage(
                self.conversation_id,
                agent=self.agent.name,
                provider=self.provider.kind,
                model=self.agent.model or "default",
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
            )
        except Exception:
            log.exception("could not record usage")

    def _record_receipt(self, outcome: TurnOutcome, totals: _Totals) -> None:
        seconds = totals.eval_s or totals.generating_s
        tps = outcome.completion_tokens / seconds if seconds > 0 else 0.0
        self.sink(
            TurnEndEvent(
                elapsed_s=round(outcome.elapsed_s, 3),
                prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens,
                tokens_per_s=round(tps, 2),
            )
        )
        if self.store is None:
            return
        try:
            self.store.record_receipt(
                self.conversation_id,
                elapsed_s=outcome.elapsed_s,
                prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens,
                tokens_per_s=tps,
            )
        except Exception:
            log.exception("could not record the turn receipt")


def _overflow_failure(exc: ContextOverflow) -> str:
    sizes = ""
    if exc.prompt_tokens and exc.window:
        sizes = f" ({exc.prompt_tokens:,} tokens for a window of {exc.window:,})"
    return (
        f"The engine rejected the request as too long{sizes} even after compacting. "
        "The conversation is intact; narrow the request or raise the engine's context size."
    )


def _budget_stop_text(budget: int) -> str:
    return (
        f"Token budget used up ({budget:,} tokens for this run): the run stops here with its "
        "progress saved. Type 'continue' to keep it going."
    )
