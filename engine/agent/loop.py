"""The agent loop: prepare the request on the ladder, stream the answer, run the tools it
asks for, feed the results back, and stop on a final answer, a cancel or the iteration cap.

One call of `run_turn` is one user turn. The loop owns no history: it reads the
conversation through `Conversation` and hands every new message (and every rewrite the
ladder makes) back through it, so nothing reaches the model before it is persisted.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from engine.agent.answer_stream import stream_answer
from engine.agent.landing import Landing
from engine.agent.reasoning import reasoning_level, reasoning_refused_text, refused_reasoning
from engine.agent.records import record_receipt, turn_end_event
from engine.agent.shared_pool import PoolContended, SharedPoolWatch, pool_shrink_text
from engine.agent.telling import Teller
from engine.agent.texts import (
    budget_stop_text,
    iteration_limit_text,
    no_tools_text,
    overflow_failure_text,
)
from engine.agent.tool_steps import run_tool_steps
from engine.agent.types import Answer, Conversation, ToolRunner, Totals, TurnOutcome
from engine.agent.window import WindowWatch
from engine.config import AgentConfig
from engine.context import ContextManager, IterationPressure, LadderOutcome, PreparedRequest
from engine.context.constants import REASON_MANUAL, REASON_SESSION_BUDGET
from engine.events import (
    NOTICE_REASONING_UNAVAILABLE,
    NOTICE_TOOLS_UNAVAILABLE,
    TOOLS_REASON_ENGINE,
    ClearEvent,
    ErrorEvent,
    Event,
    StateEvent,
    StepEvent,
)
from engine.messages import Message, alternating, model_messages
from engine.providers.base import ChatOptions, Provider, ReasoningLevel
from engine.providers.errors import ContextOverflow, ProviderError, ToolsUnsupported
from engine.store import Store
from engine.tokens import TokenCounter
from engine.window.output_cap import LIMIT_ROOM, OutputCap, output_cap
from engine.window.resolution import WindowResolution
from engine.window.truncation import CountError

log = logging.getLogger(__name__)

# Every overflow in a turn compacts with a smaller tail and retries (docs/design/context.md);
# a turn gives up after this many, or sooner when a pass does not shrink the request.
MAX_OVERFLOW_ATTEMPTS = 4
# How many times a request the engine's exact count puts above the trim line is cut again.
REFIT_TRIES = 3
# A cut to fit on an estimated count aims at most this share below the trim line.
MAX_FIT_TOLERANCE = 0.3


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
        on_window: Callable[[WindowResolution], None] | None = None,
    ) -> None:
        """`on_window` hears every window the engine reveals as the loop runs (the session
        keeps its own copy for the reports)."""
        self.agent = agent
        self.provider = provider
        self.counter = counter
        self.context = context
        self.sink = sink
        self.conversation = conversation
        self.store = store
        self.conversation_id = conversation_id
        self.tools = tools
        self.pressure = IterationPressure(agent.max_iterations)
        self.tell = Teller(conversation, sink)
        self._notice, self._mark = self.tell.notice, self.tell.mark
        self.count_error = CountError(exact=counter.estimate_is_exact)
        self.watch = WindowWatch(
            window=window,
            agent=agent,
            provider=provider,
            context=context,
            sink=sink,
            mark=self._mark,
            conversation_id=conversation_id,
            on_window=on_window,
        )
        self.pool = SharedPoolWatch(mark=self._mark, conversation=conversation)
        self.landing = Landing(
            agent=agent,
            provider=provider,
            counter=counter,
            context=context,
            conversation=conversation,
            sink=sink,
            tell=self.tell,
            watch=self.watch,
            count_error=self.count_error,
            store=store,
            conversation_id=conversation_id,
        )

    @property
    def window(self) -> WindowResolution:
        """The window the loop accounts against, as the engine has revealed it so far."""
        return self.watch.window

    # -- requests ------------------------------------------------------------------------

    def _go_without_tools(self, refusal: ToolsUnsupported) -> None:
        """The engine refused the tools: this conversation goes on without them (the same
        request again, tool-less), and the user learns why and how to get them back."""
        self.tools = None
        details: dict[str, int | str] = {"reason": TOOLS_REASON_ENGINE}
        self._mark(NOTICE_TOOLS_UNAVAILABLE, no_tools_text(refusal), details, level="warning")

    def _schemas(self) -> list[dict[str, Any]]:
        return self.tools.schemas() if self.tools is not None else []

    def _options(self, max_tokens: int | None) -> ChatOptions:
        return ChatOptions(
            max_tokens=max_tokens,
            sampling=self.agent.sampling,
            tools=self._schemas(),
            reasoning=self.reasoning,
        )

    @property
    def reasoning(self) -> ReasoningLevel | None:
        """The agent's reasoning setting as its requests carry it (None: left to the model)."""
        return reasoning_level(self.agent.reasoning, self.window.thinks)

    def _tell_reasoning_refused(self) -> None:
        """The agent asks for reasoning its model cannot do: said once in a conversation."""
        if not refused_reasoning(self.agent.reasoning, self.window.thinks):
            return
        if any(
            m.meta_value("notice_kind") == NOTICE_REASONING_UNAVAILABLE
            for m in self.conversation.live()
        ):
            return
        self._mark(
            NOTICE_REASONING_UNAVAILABLE,
            reasoning_refused_text(self.agent.reasoning, self.agent.model),
            {"asked": self.agent.reasoning, "model": self.agent.model},
            level="warning",
        )

    def overhead_tokens(self) -> int:
        """What a request costs beyond its messages: tool schemas and the template's framing."""
        schemas = self._schemas()
        return self.counter.count_tools(schemas) + self.counter.request_overhead(bool(schemas))

    def _budget(self) -> int | None:
        """The per-run token budget, or None. Every engine Brim drives is a local one, where a
        token costs nothing but time: unset, a run is not capped (a cap of one window stopped
        a healthy file-reading run after 13 requests at 29% full)."""
        limit = self.agent.budget_max_tokens
        return limit if limit else None

    async def _count_exactly(self, messages: list[Message]) -> None:
        """Have the engine count what it has not counted yet (each new message once), so
        every figure below is exact; of a long history, what a request can hold."""
        window = self.context.budget.window
        await self.counter.prime(model_messages(messages), self._schemas(), within=2 * window)

    def _size_tool_results(self) -> None:
        """Tool results are cut to what the window leaves after the fixed prefix."""
        sizer = getattr(self.tools, "size_results", None)
        if sizer is not None:
            sizer(self.context.budget.tool_result_tokens, self.counter.count_text)

    # -- the turn ------------------------------------------------------------------------

    async def run_turn(self) -> TurnOutcome:
        started = time.monotonic()
        totals = Totals()
        iterations = 0
        overflows = 0  # rejections and silent cuts met in this turn
        pool_shrinks = 0  # compactions to leave a busy shared KV pool room
        budget_compacted = False
        cap = self.agent.max_iterations
        stopped: str | None = None
        # Each turn is a run of its own (iterations count from 0): its ramp warns afresh,
        # also after the user typed 'continue' at the cap.
        self.pressure.reset()
        self._tell_reasoning_refused()
        while True:
            if cap is not None and iterations >= cap:
                self._notice(iteration_limit_text(iterations, cap), "warning")
                stopped = "iteration_limit"
                break
            iterations += 1
            pressure = self.pressure.check(iterations)
            if pressure:
                self._notice(pressure, "warning")
            await self._count_exactly(self.conversation.live())
            overhead = self.overhead_tokens()
            prepared = await self.context.prepare(
                self.conversation.live(),
                overhead_tokens=overhead,
                iterations_used=iterations,
                max_iterations=cap,
                count_tolerance=self._fit_tolerance(),
                tools_offered=self.tools is not None,
            )
            if prepared.changed:
                self.conversation.replace(prepared.history)
            if prepared.cleared:
                self.sink(ClearEvent(results_cleared=prepared.cleared))
            self.sink(StepEvent(iterations, cap))
            self.sink(StateEvent("waiting for the engine"))  # "streaming" once a token came
            request, counted = await self._held_to_window(prepared, overhead)
            await self.watch.before_request()
            sent_at = time.time()
            out_cap = output_cap(
                self.agent.max_tokens, window=self.context.budget.window, prompt_tokens=counted
            )
            try:
                answer, out_cap = await self._answer(request, out_cap, counted)
            except ContextOverflow as exc:
                overflows += 1
                # Engines that reserve the answer's room weigh it against the window too.
                reserve = out_cap.tokens if self.context.budget.output_reserve else 0
                await self.watch.overflow(
                    exc,
                    sent=counted,
                    needed=counted + reserve,
                    tolerance=self.count_error.tolerance,
                )
                if overflows > MAX_OVERFLOW_ATTEMPTS or not await self._recover_overflow(
                    exc, overhead, attempt=overflows
                ):
                    return self._failed(
                        totals, started, iterations, exc, overflow_failure_text(exc)
                    )
                iterations -= 1
                continue
            except PoolContended as exc:
                pool_shrinks += 1
                if not await self._leave_pool_room(exc, counted, overhead, pool_shrinks):
                    return self._failed(totals, started, iterations, exc, pool_shrink_text(exc))
                iterations -= 1
                continue
            except ToolsUnsupported as exc:
                if self.tools is None:  # nothing to take away: the refusal is the answer
                    return self._failed(totals, started, iterations, exc, exc.message)
                self._go_without_tools(exc)
                iterations -= 1
                continue
            except ProviderError as exc:
                return self._failed(totals, started, iterations, exc, exc.message)

            self.landing.keep(answer, out_cap)
            await self.watch.after_answer(load_s=answer.usage.load_s, sent_at=sent_at)
            truncated = self.landing.land(request, counted, answer, totals, self._schemas())
            if not truncated:
                # What a compaction on the same model replays: the engine holds it cached.
                tokens = answer.usage.prompt_tokens or counted
                self.context.sent(request, self._schemas(), tokens, sent_at)
                self.watch.answered(tokens)
            if truncated and overflows < MAX_OVERFLOW_ATTEMPTS:
                # Ollama cut the prompt silently: the same as an overflow, so compact now.
                overflows += 1
                await self._recover_overflow(None, overhead, attempt=overflows)
            if not answer.calls:
                break
            self._size_tool_results()
            await run_tool_steps(
                answer.calls,
                tools=self.tools,
                conversation=self.conversation,
                sink=self.sink,
                tell=self.tell,
                not_run=answer.calls_not_run,
            )
            if self._over_budget(totals):
                if budget_compacted:
                    self._notice(budget_stop_text(self._budget() or 0), "warning")
                    stopped = "budget"
                    break
                budget_compacted = True
                await self.compact(REASON_SESSION_BUDGET)
                totals.spent = 0

        await self._count_exactly(self.conversation.live())  # the rail's next-request figures
        # Nothing is trimmed after the reply: what the answer took is made room for by the next
        # request's ladder, where compaction gets first refusal, so the user's earlier
        # messages are summarized rather than dropped to make room for the answer.
        outcome = totals.outcome(time.monotonic() - started, iterations, stopped=stopped)
        self._record_receipt(outcome, totals)
        return outcome

    async def _held_to_window(
        self, prepared: PreparedRequest, overhead: int
    ) -> tuple[list[Message], int]:
        """The request as sent and its count, held within the window: the ladder sized it
        on estimates for what the engine had not counted yet (a result just cut), so where
        the exact count still lands above the trim line the fit rung cuts again."""
        history = prepared.history
        nudge = [prepared.nudge] if prepared.nudge is not None else []
        for _ in range(REFIT_TRIES):
            request = alternating([*history, *nudge])
            await self._count_exactly(request)
            counted = self.counter.count_request(request, self._schemas())
            if counted <= self.context.budget.trim_threshold:
                break
            fitted = self.context.fit(
                [*history, *nudge],
                overhead_tokens=overhead,
                count_tolerance=self._fit_tolerance(),
            )
            if not fitted.changed:
                break
            history = [m for m in fitted.messages if m is not prepared.nudge]
            self.conversation.replace(history)
        return request, counted

    def _fit_tolerance(self) -> float:
        """How far below the trim line a cut to fit aims: nothing where the engine counts
        exactly, else the counting error measured so far (uncalibrated: a fixed guess)."""
        if self.counter.estimate_is_exact:
            return 0.0
        return min(self.count_error.tolerance, MAX_FIT_TOLERANCE)

    async def compact(self, reason: str = REASON_MANUAL) -> bool:
        """`/compact`, the summarize_context tool and a used-up budget: the ladder's path."""
        outcome = await self.compact_outcome(reason)
        return outcome.compaction is not None and outcome.compaction.ok

    async def compact_outcome(self, reason: str = REASON_MANUAL) -> LadderOutcome:
        """The same, with what it did (for the summarize_context tool's answer)."""
        self.sink(StateEvent("compacting"))
        await self._count_exactly(self.conversation.live())
        outcome = await self.context.compact(
            self.conversation.live(), reason=reason, overhead_tokens=self.overhead_tokens()
        )
        if outcome.history != model_messages(self.conversation.live()):
            self.conversation.replace(outcome.history)
        return outcome

    async def _recover_overflow(
        self, exc: ContextOverflow | None, overhead: int, *, attempt: int = 1
    ) -> bool:
        """Compact (or trim) with a tail that halves with every attempt of the turn; False
        when the pass did not shrink the history, and a retry would only fail the same way."""
        self.sink(StateEvent("compacting"))
        outcome = await self.context.on_overflow(
            self.conversation.live(),
            overhead_tokens=overhead,
            rejected=exc is not None,
            attempt=attempt,
        )
        if outcome.history != model_messages(self.conversation.live()):
            self.conversation.replace(outcome.history)
        return outcome.shrank

    async def _leave_pool_room(
        self, exc: PoolContended, counted: int, overhead: int, attempt: int
    ) -> bool:
        """Compact so the request takes no more than its share of a shared KV pool that
        other requests keep full; False when that cannot be done (again)."""
        if attempt > MAX_OVERFLOW_ATTEMPTS:
            return False
        self.sink(StateEvent("compacting"))
        outcome = await self.context.on_shared_pool(
            self.conversation.live(),
            overhead_tokens=overhead,
            target_tokens=max(1, counted - exc.excess),
            attempt=attempt,
        )
        if outcome.history != model_messages(self.conversation.live()):
            self.conversation.replace(outcome.history)
        return outcome.shrank

    async def _answer(
        self, request: list[Message], cap: OutputCap, counted: int
    ) -> tuple[Answer, OutputCap]:
        """The answer and the cap it had. vLLM and SGLang refuse prompt + max_tokens above
        their window: refused for the answer's room alone, the same request goes again
        with the room left, and a prompt that fits is not compacted."""
        try:
            return await self._pooled(request, cap.tokens, counted), cap
        except ContextOverflow as exc:
            tolerance = self.count_error.tolerance
            schemas = self._schemas()
            room = await self.watch.room_left(
                exc, cap.tokens, request, schemas, sent=counted, tolerance=tolerance
            )
            if room is None:
                raise
        return await self._pooled(request, room, counted), OutputCap(room, LIMIT_ROOM)

    async def _pooled(self, request: list[Message], max_tokens: int, counted: int) -> Answer:
        """The answer, sent again while a shared KV pool drains (engine/agent/shared_pool.py)."""
        answer: Answer = await self.pool.run(
            functools.partial(
                stream_answer,
                self.provider,
                self.agent.model,
                request,
                self._options(max_tokens),
                counter=self.counter,
                conversation=self.conversation,
                sink=self.sink,
                counted=counted,
                window=self.context.budget.window,
            ),
            needed=counted + max_tokens,
            pool=self.context.budget.window,
            slots=self.window.slots,
        )
        answer.ended = time.monotonic()  # its rate counts generation, not the checks after it
        return answer

    def _over_budget(self, totals: Totals) -> bool:
        budget = self._budget()
        return budget is not None and totals.spent >= budget

    def _failed(
        self, totals: Totals, started: float, iterations: int, exc: ProviderError, text: str
    ) -> TurnOutcome:
        """The turn ends on `exc`. What it spent before (tool steps answered, an answer cut
        off) still gets its receipt, told before the error so the error is the last word."""
        outcome = totals.outcome(time.monotonic() - started, iterations, error=exc)
        if outcome.prompt_tokens or outcome.completion_tokens:
            self._record_receipt(outcome, totals)
        self.sink(ErrorEvent(exc.kind, text, retryable=exc.retryable))
        return outcome

    def _record_receipt(self, outcome: TurnOutcome, totals: Totals) -> None:
        self.sink(turn_end_event(outcome, totals))
        record_receipt(self.store, self.conversation_id, outcome, totals)
