"""The ladder as one pipeline the agent loop calls before every request.

Before every request, the first of a turn and each after a tool step: count → clear (above
50%) → warn → compact (at the compaction threshold) → trim (above 95%) → fit (what is still
above 95%: the newest unit, which the other rungs keep whole, is cut to the room left).
Compaction that cannot do its job (the summarizer failed, its summary was empty or cut off,
or nothing is old enough to summarize) goes straight to trimming to the compaction
threshold, and the user is told once. A summarizer failure never fails the
run. Nothing is trimmed after a reply: trimming then would drop the user's earlier messages
to make room for the answer just written, before compaction had its first refusal; the
next request's ladder makes the room (and every answer's output cap leaves room for the
prompt it answered, engine/window/output_cap.py). A context-overflow rejection from the engine
compacts regardless of the estimate (or trims to 70% of the history's size when compaction
cannot run), with a recent tail halved at every attempt; the caller retries up to four times
in a turn and gives up sooner when a pass does not shrink the history (docs/design/context.md).

Events (`CompactionEvent`, `TrimEvent`, `NoticeEvent`) go to the `sink` as they happen, so a
`compaction started` reaches the window before the slow summarizer call, not after it. The
manager owns no history: every method takes the current model messages and returns the new
ones, which the caller stores. Notice rows (role "notice") are never sent and are dropped
from what comes back.

This module holds the counting, the pipeline and the entry points; the rungs that cut
(trim, fit, compaction with its fallback) are engine/context/rungs.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.context.budget import (
    ContextBudget,
    ContextUsage,
    overflow_trim_budget,
    replay_margin,
    replay_min_answer,
)
from engine.context.clearing import StoreResult, clear_tool_results
from engine.context.compaction import (
    BeforeSummarize,
    CompactionResult,
    JournalSink,
    Replay,
    Summarize,
)
from engine.context.constants import (
    DEFAULT_COMPACTION_RATIO,
    PROTECTED_TURNS,
    REASON_MANUAL,
    REASON_OVERFLOW,
    REASON_PREFLIGHT,
    REASON_SHARED_POOL,
)
from engine.context.fitting import FitResult
from engine.context.history import CountMessage
from engine.context.ladder_outcomes import LadderOutcome, PreparedRequest
from engine.context.nudges import context_nudge, iteration_nudge, pressure_message
from engine.context.rungs import CountRequest, LadderRungs
from engine.context.summarizer_record import SummarizerRecord
from engine.events import (
    NOTICE_OVERFLOW,
    EventSink,
    NoticeEvent,
    discard,
)
from engine.messages import Message, model_messages

OVERFLOW_NOTICE = (
    "The engine rejected the request as too long for its context window: "
    "compacting and retrying with less of the conversation"
)


class ContextManager:
    """The context ladder for one conversation on one effective window.

    `count_message` counts one message (cached by the caller's counter as it likes);
    `count`, when given, counts a whole list of messages exactly (chat template framing
    included) and is used for the usage decisions. `overhead_tokens` passed to each call is
    what the request adds beyond its messages (tool schemas, scaffolding), measured by the
    caller. `summarize` is the summarizer (None: compaction never runs, the ladder trims).
    `work_state` returns the rendered work state for the summarizer's prompt.
    """

    def __init__(
        self,
        *,
        window: int,
        count_message: CountMessage,
        summarize: Summarize | None = None,
        count: CountRequest | None = None,
        compaction_ratio: float = DEFAULT_COMPACTION_RATIO,
        reserve_tokens: int | None = None,
        store_result: StoreResult | None = None,
        journal: JournalSink | None = None,
        work_state: Callable[[], str] | None = None,
        sink: EventSink = discard,
        protected_turns: int = PROTECTED_TURNS,
        summarizer_window: int | None = None,
        before_summarize: BeforeSummarize | None = None,
        output_reserve: int = 0,
        summarizer_shares_cache: bool = False,
        checkpoint_after_kept: bool = False,
        tools_offered: bool = True,
        summarizer_record: SummarizerRecord | None = None,
        instruction_tokens: int = 0,
        on_sent: Callable[[Replay], None] = lambda replay: None,  # "What the model saw"
    ) -> None:
        """`instruction_tokens`: the longest instruction a request on the cached conversation
        carries (the checkpoint's, memory's): with `summarizer_shares_cache` the trigger
        leaves room for it and its answer on every window (`ContextBudget.compaction_room`)."""
        self._instruction_tokens = instruction_tokens if summarizer_shares_cache else 0
        self.on_sent = on_sent
        self.budget = ContextBudget(
            window, compaction_ratio, reserve_tokens, output_reserve,
            compaction_room=self._compaction_room(window),
        )  # fmt: skip
        self.count_message = count_message
        self.summarize = summarize
        self._count = count
        self.store_result = store_result
        self.journal = journal
        self.work_state = work_state
        self.sink = sink
        self.protected_turns = protected_turns
        self.summarizer_window = summarizer_window
        self.before_summarize = before_summarize
        # The summarizer is the agent's own model on the same engine: compaction replays the
        # conversation as last sent (its KV cache) instead of retelling it as a transcript.
        self.summarizer_shares_cache = summarizer_shares_cache
        # The engine reuses kept messages where a compaction moves them (llama-server's
        # chunk reuse): the checkpoint goes after them, before the current request.
        self.checkpoint_after_kept = checkpoint_after_kept
        # Whether the requests carry tools (each `prepare` says): a checkpoint for a model
        # without them names no stored file to read.
        self.tools_offered = tools_offered
        self.summarizer_record = summarizer_record or SummarizerRecord("this conversation")
        # Trim, fit, and compaction with its fallback (engine/context/rungs.py).
        self._rungs = LadderRungs(self, count)

    def prefer_guided(self) -> None:
        """From now on a compaction asks the guided questions (one section at a time, each
        answer checked) instead of the free-form checkpoint: the user restored one."""
        self._rungs.guided_only = True

    # Counting -------------------------------------------------------------------------

    def set_window(self, window: int) -> None:
        """The effective window changed (a new engine report, a new ceiling)."""
        b = self.budget
        reserve = (
            b.reserve_tokens if b.reserve_tokens is None or b.reserve_tokens < window else None
        )
        self.budget = ContextBudget(
            window, b.compaction_ratio, reserve, b.output_reserve, b.fixed_tokens,
            self._compaction_room(window),
        )  # fmt: skip

    def _compaction_room(self, window: int) -> int:
        if not self._instruction_tokens:
            return 0
        return self._instruction_tokens + replay_margin(window) + replay_min_answer(window)

    def measure_prefix(self, messages: Sequence[Message], overhead_tokens: int) -> int:
        """Measure the fixed prefix every request carries (the leading system message, the
        tool schemas and the framing in `overhead_tokens`) and size the budgets from it."""
        fixed = overhead_tokens
        for message in messages:
            if message.is_notice:
                continue
            if message.role != "system":
                break
            fixed += self.count_message(message)
        self.budget = self.budget.with_fixed(fixed)
        return fixed

    def tokens(self, messages: Sequence[Message], overhead_tokens: int = 0) -> int:
        msgs = list(messages)
        counted = self._count(msgs) if self._count else sum(map(self.count_message, msgs))
        return counted + overhead_tokens

    def usage(self, messages: Sequence[Message], overhead_tokens: int = 0) -> ContextUsage:
        return self.budget.usage(self.tokens(messages, overhead_tokens))

    def sent(
        self, request: Sequence[Message], tools: Sequence[dict], tokens: int, at: float
    ) -> None:
        """The engine accepted `request` (its wire form, sent at `at`) whole: what a
        compaction replays."""
        self._rungs.last_sent = Replay(tuple(request), tuple(tools), tokens, at)
        self.on_sent(self._rungs.last_sent)

    def next_request(
        self,
        history: Sequence[Message],
        *,
        overhead_tokens: int = 0,
        iterations_used: int = 1,
        max_iterations: int | float | None = None,
        tools_offered: bool = True,
    ) -> list[Message]:
        """The request `prepare` would build from `history` when no rung fires: the history
        and the nudge it would carry. What the gauge counts as "next request"."""
        msgs = model_messages(list(history))
        usage = self.usage(msgs, overhead_tokens)
        nudge = pressure_message(
            self._nudge_lines(
                usage, self._rungs.just_compacted, iterations_used, max_iterations, tools_offered
            )
        )
        return [*msgs, nudge] if nudge else msgs

    def _nudge_lines(
        self,
        usage: ContextUsage,
        just_compacted: bool,
        iterations_used: int,
        max_iterations: int | float | None,
        tools_offered: bool,
    ) -> list[str | None]:
        """The lines the next request carries after the history. The context lines ask for
        tool behaviour (record, consolidate, read less, resume the task): a model offered
        no tools can act on none of them, and a small one answers the bracketed line that
        now follows the user's question instead of the question. Without tools the request
        ends with the user's own words; the user still sees the gauge and the notices."""
        if not tools_offered:
            return [iteration_nudge(iterations_used, max_iterations)]
        return [
            context_nudge(usage, just_compacted=just_compacted),
            self._rungs.progress_note if just_compacted else None,
            iteration_nudge(iterations_used, max_iterations),
        ]

    # The pipeline -----------------------------------------------------------------------

    async def prepare(
        self,
        history: Sequence[Message],
        *,
        overhead_tokens: int = 0,
        iterations_used: int = 0,
        max_iterations: int | float | None = None,
        count_tolerance: float = 0.0,
        tools_offered: bool = True,
    ) -> PreparedRequest:
        """Run the ladder on the history about to be sent and build the request.
        `count_tolerance` is how far the counts may be from the engine's (a share): the fit
        rung, when it must cut, cuts that much further below the trim line. Without
        `tools_offered` the request carries no context lines (see `_nudge_lines`)."""
        msgs = model_messages(list(history))
        original = list(msgs)
        self.tools_offered = tools_offered
        self.measure_prefix(msgs, overhead_tokens)
        usage = self.usage(msgs, overhead_tokens)
        cleared = trimmed = 0
        compaction: CompactionResult | None = None

        if usage.clear_due:
            result = clear_tool_results(
                msgs, count_message=self.count_message, store_result=self.store_result
            )
            if result.cleared:
                msgs, cleared = result.messages, result.cleared
                usage = self.usage(msgs, overhead_tokens)

        if usage.compact_due:
            outcome = await self._rungs.compact_or_trim(
                msgs, REASON_PREFLIGHT, overhead_tokens, announce=usage
            )
            msgs, compaction, trimmed = outcome.history, outcome.compaction, outcome.trimmed
            usage = self.usage(msgs, overhead_tokens)

        if usage.trim_due:
            msgs, dropped = self._rungs.trim(msgs, self.budget.trim_threshold, overhead_tokens)
            trimmed += dropped
            usage = self.usage(msgs, overhead_tokens)

        just_compacted = self._rungs.just_compacted
        self._rungs.just_compacted = False

        def nudge_for(usage: ContextUsage) -> Message | None:
            return pressure_message(
                self._nudge_lines(
                    usage, just_compacted, iterations_used, max_iterations, tools_offered
                )
            )

        nudge = nudge_for(usage)
        request = [*msgs, nudge] if nudge else list(msgs)
        fitted = None
        if self.usage(request, overhead_tokens).used > self.budget.trim_threshold:
            # Still above the trim line: the newest unit itself is too big (the rungs above
            # keep it whole). Cut it to the room left, so no request exceeds the window.
            msgs, fitted = self._rungs.fit(msgs, overhead_tokens, nudge, count_tolerance)
            usage = self.usage(msgs, overhead_tokens)
            nudge = nudge_for(usage)
            request = [*msgs, nudge] if nudge else list(msgs)
        return PreparedRequest(
            history=msgs,
            request=request,
            nudge=nudge,
            usage=self.usage(request, overhead_tokens),
            changed=msgs != original,
            cleared=cleared,
            compaction=compaction,
            trimmed=trimmed,
            fitted=fitted,
        )

    async def compact(
        self,
        history: Sequence[Message],
        *,
        reason: str = REASON_MANUAL,
        overhead_tokens: int = 0,
    ) -> LadderOutcome:
        """Compact now (`/compact`, the `summarize_context` tool, a used-up session budget):
        the same path as automatic compaction, differing only in when it runs; an automatic
        one run ahead of the next turn (engine/session/ahead.py) is announced as it is."""
        msgs = model_messages(list(history))
        self.measure_prefix(msgs, overhead_tokens)
        usage = self.usage(msgs, overhead_tokens) if reason == REASON_PREFLIGHT else None
        return await self._rungs.compact_or_trim(msgs, reason, overhead_tokens, announce=usage)

    async def on_overflow(
        self,
        history: Sequence[Message],
        *,
        overhead_tokens: int = 0,
        attempt: int = 1,
        rejected: bool = True,
    ) -> LadderOutcome:
        """The engine rejected the request as too long (or, `rejected` False, silently
        truncated it): compact regardless of the estimate, with a tail halved per attempt;
        when compaction cannot run, trim to 70% of the history's size. Check `shrank` before
        retrying. A silent cut is not retried (its answer came back), so the "retrying
        once" notice is only said for a rejection; the caller tells of the cut itself."""
        msgs = model_messages(list(history))
        self.measure_prefix(msgs, overhead_tokens)
        if rejected:
            self.sink(NoticeEvent(level="warning", text=OVERFLOW_NOTICE, kind=NOTICE_OVERFLOW))
        fallback = overflow_trim_budget(sum(map(self.count_message, msgs)))
        return await self._shrink(msgs, REASON_OVERFLOW, overhead_tokens, attempt, fallback)

    async def on_shared_pool(
        self,
        history: Sequence[Message],
        *,
        overhead_tokens: int = 0,
        target_tokens: int,
        attempt: int = 1,
    ) -> LadderOutcome:
        """Other requests kept a shared KV pool too full for this one to run beside them
        (engine/agent/shared_pool.py): compact with a tail halved per attempt so that the
        request leaves them room; when compaction cannot run, trim to `target_tokens`.
        The window itself is not in doubt, so nothing is learned from this."""
        msgs = model_messages(list(history))
        self.measure_prefix(msgs, overhead_tokens)
        fallback = max(1, target_tokens - overhead_tokens)
        return await self._shrink(msgs, REASON_SHARED_POOL, overhead_tokens, attempt, fallback)

    async def _shrink(
        self, msgs: list[Message], reason: str, overhead: int, attempt: int, fallback: int
    ) -> LadderOutcome:
        before = self.tokens(msgs)
        tail = max(1, self.budget.tail_tokens >> max(0, attempt))
        outcome = await self._rungs.compact_or_trim(
            msgs, reason, overhead, announce=None, fallback_budget=fallback, tail_tokens=tail
        )
        return LadderOutcome(
            outcome.history,
            outcome.compaction,
            outcome.trimmed,
            before,
            self.tokens(outcome.history),
        )

    # The fit rung alone -------------------------------------------------------------------

    def fit(
        self,
        history: Sequence[Message],
        *,
        overhead_tokens: int = 0,
        count_tolerance: float = 0.0,
    ) -> FitResult:
        """The fit rung alone, for a request that the engine's own count put above the
        trim line after `prepare` (an estimate that ran short): cut it below that line."""
        msgs = model_messages(list(history))
        return self._rungs.fit(msgs, overhead_tokens, None, count_tolerance)[1]
