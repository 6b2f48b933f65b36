"""The ladder's rungs that cut the history: trim, fit, and compaction with its fallback.

Trim drops the oldest whole units to a threshold (engine/context/trimming.py); fit cuts the
newest unit itself to the room left (engine/context/fitting.py); compaction summarizes the
old part (engine/context/compaction.py). A compaction that cannot do its job (the
summarizer failed, its summary was empty or cut off, or nothing is old enough to summarize)
trims instead, and the user is told why once per conversation; what trimming discards
without a summary is told every time.

`LadderRungs` reads the ladder's settings as they are at each call (the session changes the
summarizer's window; a test swaps the sink), through the `Ladder` it is given: the
`ContextManager` (engine/context/manager.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from engine.context.budget import ContextBudget, ContextUsage
from engine.context.clearing import StoreResult
from engine.context.compaction import (
    BeforeSummarize,
    JournalSink,
    Replay,
    Summarize,
    compact,
    plan_compaction,
)
from engine.context.constants import REASON_MANUAL
from engine.context.fitting import FitResult, fit_messages
from engine.context.history import CountMessage
from engine.context.ladder_events import compaction_finished_events, fitted_event, trimmed_event
from engine.context.ladder_outcomes import LadderOutcome
from engine.context.notices import (
    compaction_fallback_notice,
    nothing_to_compact_notice,
    preflight_notice,
)
from engine.context.summarizer_record import SummarizerRecord
from engine.context.trimming import trim_messages
from engine.events import (
    NOTICE_AUTO_COMPACTING,
    NOTICE_COMPACTION_FALLBACK,
    NOTICE_NOTHING_TO_COMPACT,
    CompactionEvent,
    EventSink,
    NoticeEvent,
    TrimEvent,
)
from engine.messages import Message

log = logging.getLogger(__name__)

CountRequest = Callable[[list[Message]], int]


class Ladder(Protocol):
    """What the rungs read of the ladder they belong to, at each call."""

    budget: ContextBudget
    count_message: CountMessage
    summarize: Summarize | None
    store_result: StoreResult | None
    journal: JournalSink | None
    work_state: Callable[[], str] | None
    sink: EventSink
    protected_turns: int
    summarizer_window: int | None
    before_summarize: BeforeSummarize | None
    summarizer_shares_cache: bool
    checkpoint_after_kept: bool
    tools_offered: bool
    summarizer_record: SummarizerRecord

    def tokens(self, messages: Sequence[Message], overhead_tokens: int = 0) -> int: ...


class LadderRungs:
    """The cutting rungs of one ladder, and what compaction remembers between its runs."""

    def __init__(self, ladder: Ladder, count: CountRequest | None) -> None:
        self._ladder = ladder
        self._count = count
        self.last_sent: Replay | None = None  # what a compaction on the same model replays
        self.just_compacted = False  # the next request resumes with the progress note
        self.progress_note = ""
        self._fallback_told = False  # the user hears once that compaction fell back to trim
        # Once a summarizer's whole-schema checkpoint is refused, later compactions in this
        # conversation ask the guided questions straight away; across conversations what
        # each summarizer model has shown it can write decides (summarizer_record.py).
        self.guided_only = False

    def message_budget(self, threshold: int, msgs: list[Message], overhead: int) -> int:
        """A request-level threshold in the per-message units the rungs count in."""
        framing = 0
        if self._count is not None:
            count_message = self._ladder.count_message
            framing = max(0, self._count(msgs) - sum(map(count_message, msgs)))
        return threshold - overhead - framing

    def trim(
        self, msgs: list[Message], threshold: int, overhead: int, *, notify: bool = True
    ) -> tuple[list[Message], int]:
        ladder = self._ladder
        result = trim_messages(
            msgs,
            budget=self.message_budget(threshold, msgs, overhead),
            count_message=ladder.count_message,
            protected_turns=ladder.protected_turns,
        )
        if result.dropped:
            ladder.sink(TrimEvent(messages_dropped=result.dropped))
            if notify:
                ladder.sink(trimmed_event(result.dropped))
        return result.messages, result.dropped

    def fit(
        self, msgs: list[Message], overhead: int, nudge: Message | None, tolerance: float
    ) -> tuple[list[Message], FitResult]:
        ladder = self._ladder
        # An estimate may run short of the engine's count by `tolerance`: cut below the line
        # by as much, so the engine's own count still lands under it.
        line = int(ladder.budget.trim_threshold / (1.0 + max(0.0, tolerance)))
        room = self.message_budget(line, msgs, overhead)
        if nudge is not None:
            room -= ladder.count_message(nudge)
        result = fit_messages(
            msgs, budget=room, count_message=ladder.count_message, store_result=ladder.store_result
        )
        if result.changed:
            ladder.sink(fitted_event(result, ladder.budget.window))
        return result.messages, result

    def _work_state_text(self) -> str | None:
        if self._ladder.work_state is None:
            return None
        try:
            return self._ladder.work_state()
        except Exception:
            log.warning("could not read the work state for the summarizer", exc_info=True)
            return None

    def _trim_instead(
        self,
        msgs: list[Message],
        overhead: int,
        detail: str | None,
        fallback_budget: int | None,
    ) -> tuple[list[Message], int]:
        """Compaction could not run (`detail` says why, None: nothing old enough): trim to
        `fallback_budget`, or to the compaction threshold."""
        ladder = self._ladder
        # Why compaction could not run is said once per conversation; what trimming
        # discarded without a summary is said every time it discards something.
        explain = (detail is not None or fallback_budget is not None) and not (self._fallback_told)
        if fallback_budget is not None:
            trimmed = trim_messages(
                msgs,
                budget=fallback_budget,
                count_message=ladder.count_message,
                protected_turns=ladder.protected_turns,
            )
            out, dropped = trimmed.messages, trimmed.dropped
            if dropped:
                ladder.sink(TrimEvent(messages_dropped=dropped))
                if not explain:
                    ladder.sink(trimmed_event(dropped))
        else:
            threshold = ladder.budget.compact_threshold
            out, dropped = self.trim(msgs, threshold, overhead, notify=not explain)
        if explain and (detail is not None or dropped):
            self._fallback_told = True
            text = compaction_fallback_notice(detail or "nothing old enough to summarize", dropped)
            ladder.sink(
                NoticeEvent(
                    level="warning",
                    text=text,
                    kind=NOTICE_COMPACTION_FALLBACK,
                    details={"messages_dropped": dropped},
                )
            )
        return out, dropped

    async def compact_or_trim(
        self,
        msgs: list[Message],
        reason: str,
        overhead: int,
        *,
        announce: ContextUsage | None,
        fallback_budget: int | None = None,
        tail_tokens: int | None = None,
    ) -> LadderOutcome:
        ladder = self._ladder
        before = ladder.tokens(msgs, overhead)
        tail = tail_tokens if tail_tokens is not None else ladder.budget.tail_tokens
        plan = plan_compaction(msgs, count_message=ladder.count_message, tail_tokens=tail)

        if ladder.summarize is None or plan.nothing_to_summarize:
            # Nothing worth a summarizer call: no "auto-compacting" notice, trim instead.
            if reason == REASON_MANUAL and plan.nothing_to_summarize:
                ladder.sink(
                    NoticeEvent(
                        level="info",
                        text=nothing_to_compact_notice(),
                        kind=NOTICE_NOTHING_TO_COMPACT,
                    )
                )
                return LadderOutcome(msgs, None, 0, before, before)
            detail = None if ladder.summarize is not None else "no summarizer is configured"
            out, dropped = self._trim_instead(msgs, overhead, detail, fallback_budget)
            return LadderOutcome(out, None, dropped, before, ladder.tokens(out, overhead))

        if announce is not None:
            ladder.sink(
                NoticeEvent(
                    level="warning",
                    text=preflight_notice(announce.used, announce.window),
                    kind=NOTICE_AUTO_COMPACTING,
                    details={"used": announce.used, "window": announce.window},
                )
            )
        ladder.sink(CompactionEvent(phase="started", reason=reason, messages_before=len(msgs)))
        asked = ladder.summarizer_record.ask()
        if self.guided_only and asked == "freeform":
            asked = "guided"
        result = await compact(
            msgs,
            window=ladder.budget.window,
            count_message=ladder.count_message,
            summarize=ladder.summarize,
            reason=reason,
            work_state=self._work_state_text(),
            journal=ladder.journal,
            tail_tokens=tail,
            max_summary_tokens=ladder.budget.summary_tokens,
            summarizer_window=ladder.summarizer_window,
            before_summarize=ladder.before_summarize,
            guided_only=asked == "guided",
            mechanical_only=asked == "mechanical",
            replay=self.last_sent if ladder.summarizer_shares_cache else None,
            store_result=ladder.store_result,
            checkpoint_after_kept=ladder.checkpoint_after_kept,
            tools_offered=ladder.tools_offered,
        )
        if result.freeform_refused:
            self.guided_only = True
        if result.status in ("compacted", "refused"):  # the model's answers were judged
            ladder.summarizer_record.note(
                asked=asked, freeform_refused=result.freeform_refused, source=result.source
            )
        if result.ok:
            for event in compaction_finished_events(result, msgs):
                ladder.sink(event)
            self.just_compacted = True
            self.progress_note = result.progress_note
            self.last_sent = None  # the history it replayed is gone
            out = result.messages
            # A summary that still leaves the request over the trim line (a huge newest
            # message, a long checkpoint) is followed by the trim rung at once; below the
            # line what compaction kept stays (trimming it to the compaction threshold only
            # discarded, without a summary, what the summarizer had just chosen to keep).
            dropped = 0
            if ladder.tokens(out, overhead) > ladder.budget.trim_threshold:
                out, dropped = self.trim(out, ladder.budget.trim_threshold, overhead)
            return LadderOutcome(out, result, dropped, before, ladder.tokens(out, overhead))

        ladder.sink(
            CompactionEvent(
                phase="failed",
                reason=reason,
                messages_before=len(msgs),
                messages_after=len(msgs),
            )
        )
        out, dropped = self._trim_instead(msgs, overhead, result.detail, fallback_budget)
        return LadderOutcome(out, result, dropped, before, ladder.tokens(out, overhead))
