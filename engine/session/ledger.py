"""The context rail's bookkeeping for one session: a listener on the session's event stream.

`ContextLedger` owns the request tracker (the rail's timeline, its markers, the cache
shares), the 70% / 90% fill warnings, the last report a streaming update builds on, and the
ladder's saved rows. It hears every event the session emits (`observe`) and the context
manager's own (`on_ladder_event`), and answers with what the rail needs: a fill warning
saved in the conversation, a fresh context report after each request that lands.

What it reads of the session is passed in at construction as small callables (the report
as built now, the loop's budget, the estimate of the history now), so it holds no session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.context.budget import ContextBudget
from engine.context.constants import REASON_MANUAL
from engine.events import (
    NOTICE_AUTO_COMPACTING,
    NOTICE_COMPACTED,
    NOTICE_COMPACTION_FALLBACK,
    NOTICE_TRIMMED,
    AnswerProgressEvent,
    ClearEvent,
    CompactionEvent,
    ContextEvent,
    ContextReportEvent,
    Event,
    EventSink,
    NoticeEvent,
    StateEvent,
    TrimEvent,
    UsageEvent,
    notice_kind,
)
from engine.messages import Message, notice
from engine.report.context_report import (
    MARKER_CLEAR,
    MARKER_COMPACTION,
    MARKER_TRIM,
    Category,
    ContextReport,
    FillWarnings,
    RequestTracker,
    compaction_row,
    saved_marks,
    saved_timeline,
)
from engine.store import Store

log = logging.getLogger(__name__)

# The rail's part for what a thinking model reasons while its answer streams: in the window
# until the turn ends, never sent back.
CATEGORY_REASONING = "Reasoning (this answer)"


@dataclass(frozen=True)
class LedgerInputs:
    """What the ledger reads of the session, each asked afresh when needed.

    `report` builds the rail's report now (with the ledger's tracker); `budget` is the
    running loop's budget (None before one is wired); `window` the window Brim accounts
    against (0 before it is known); `estimate_now` Brim's count of the history as it stands;
    `manual_compaction` whether `/compact` (not the agent's tool) is running now."""

    report: Callable[[], ContextReport]
    budget: Callable[[], ContextBudget | None]
    window: Callable[[], int]
    estimate_now: Callable[[], int]
    manual_compaction: Callable[[], bool]


class ContextLedger:
    """The rail's bookkeeping, fed by the session's events (see the module docstring).

    `emit` sends an event on (through the session, so the ledger hears its own reports
    too); `save_notice` keeps a notice in the conversation and emits it."""

    def __init__(
        self,
        inputs: LedgerInputs,
        *,
        emit: EventSink,
        save_notice: Callable[[Message], None],
    ) -> None:
        self._inputs = inputs
        self._emit = emit
        self._save_notice = save_notice
        self.tracker = RequestTracker()
        self.fill_warnings = FillWarnings()
        self.last_report: ContextReport | None = None  # what a streaming update builds on
        self._compacting_from: int | None = None  # context before a running compaction
        self._compaction_row: str | None = None  # replaces the ladder's "Compacted" line
        self._reasoning = 0  # tokens the streaming answer reasoned so far

    # -- a conversation opens --------------------------------------------------------------

    def reset(self, *, resumed: bool) -> None:
        """Another conversation opens: nothing of the last one's rail carries over."""
        self.tracker.reset()
        self.fill_warnings = FillWarnings()
        self.tracker.resumed = resumed

    def restore_timeline(self, store: Store | None, conversation_id: str) -> None:
        """The rail's timeline covers the whole conversation, not only this process's part:
        seed the tracker from the stored chat requests and the ladder's saved acts."""
        if store is None or not conversation_id:
            return
        try:
            requests = store.usage_records(conversation_id, purpose="chat")
            marks = saved_marks(store.records(conversation_id, roles=("notice", "tool")))
        except Exception:
            log.warning("could not read the timeline of %s", conversation_id)
            return
        points, markers = saved_timeline(requests, marks, self._inputs.window())
        self.tracker.restore(points, markers, len(requests))

    @property
    def needs_window(self) -> bool:
        """A resumed timeline restored before the window was known: draw it again once it
        is (nothing has happened in this process yet)."""
        return self.tracker.resumed and not self.tracker.acts_here

    # -- the session's events --------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Feed the request tracker; after each landed request, warn at 70% / 90% once and
        send the rail its report. A streaming answer moves the gauge as it grows."""
        if isinstance(event, AnswerProgressEvent):
            self.tracker.on_stream(event.prompt_tokens, event.completion_tokens)
            self._reasoning = event.reasoning_tokens
            self._emit_stream_report()
        elif isinstance(event, UsageEvent):
            self.tracker.on_usage(event.prompt_tokens, event.cached_tokens)
        elif isinstance(event, ContextEvent):
            self.tracker.on_context(event.used, event.window, estimated=event.estimated)
            budget = self._inputs.budget()
            # Warned on the history as the rail shows it (the answer included), so the
            # warning never promises room the rail already says is gone.
            used = max(event.used, self._inputs.estimate_now())
            warning = self.fill_warnings.check(used, budget) if budget else None
            if warning:
                self._save_notice(notice(warning, "warning"))
            self.emit_report()
        elif isinstance(event, ClearEvent):
            self.tracker.on_marker(MARKER_CLEAR, f"{event.results_cleared} tool results")
        elif isinstance(event, TrimEvent):
            self.tracker.on_marker(MARKER_TRIM, f"{event.messages_dropped} messages")
        elif isinstance(event, CompactionEvent) and event.phase == "finished":
            detail = f"{event.messages_before} -> {event.messages_after} messages"
            self.tracker.on_marker(MARKER_COMPACTION, detail, event.compaction)

    # -- the ladder's events ---------------------------------------------------------------

    def on_ladder_event(self, event: Event) -> None:
        """The context manager's events. Its notices are saved in the conversation (they
        are part of what happened), with their kind and figures; a finished compaction is
        told as the receipt's two lines saved in place of the ladder's own. The ladder's lines
        ("auto-compacting…", "Compacted 64 → 12 messages") still go out, marked
        transient: headless output shows them, a window leaves them to its state
        (`compacting`) and the saved row."""
        if isinstance(event, CompactionEvent):
            self._on_compaction(event)
            self._emit(event)
            if event.phase == "started":  # the header says so while the summary is written
                self._emit(StateEvent("compacting"))
            return
        if isinstance(event, NoticeEvent):
            self._on_ladder_notice(event)
            return
        self._emit(event)

    def _on_compaction(self, event: CompactionEvent) -> None:
        if event.phase == "started":
            self._compacting_from = self._inputs.estimate_now()
            return
        if event.phase != "finished":
            self._compaction_row = None
            return
        budget = self._inputs.budget()
        self._compaction_row = compaction_row(
            event.messages_before,
            event.messages_after,
            self._compacting_from or 0,
            budget.window if budget is not None else self._inputs.window(),
            event.reason,
            replaced=event.messages_replaced,
            asked_by_agent=event.reason == REASON_MANUAL and not self._inputs.manual_compaction(),
            summary=event.summary,
        )

    def _on_ladder_notice(self, event: NoticeEvent) -> None:
        if event.kind == NOTICE_AUTO_COMPACTING:
            self._emit(replace(event, transient=True))
            return
        text, marker = event.text, ""
        if event.kind == NOTICE_COMPACTED and self._compaction_row is not None:
            self._emit(replace(event, transient=True))
            text, self._compaction_row, marker = self._compaction_row, None, MARKER_COMPACTION
        elif event.kind == NOTICE_TRIMMED or (
            event.kind == NOTICE_COMPACTION_FALLBACK and event.details.get("messages_dropped")
        ):
            marker = MARKER_TRIM
        self._save_notice(notice_message(replace(event, text=text, marker=marker)))

    # -- the rail's report -----------------------------------------------------------------

    def emit_report(self) -> None:
        try:
            report = self._inputs.report()
        except Exception:  # the rail is a view: a failure here must not stop a turn
            log.exception("could not build the context report")
            return
        self.last_report = report
        self._emit(ContextReportEvent(report))

    def _emit_stream_report(self) -> None:
        """The last full report with the streaming figure in it: the breakdown is not
        recounted ten times a second, only the headline moves."""
        base = self.last_report
        if base is None or self.tracker.streaming is None:
            self.emit_report()
            return
        used = sum(self.tracker.streaming)
        categories = base.categories
        if self._reasoning:
            categories = (*categories, Category(CATEGORY_REASONING, self._reasoning))
        self._emit(
            ContextReportEvent(
                replace(
                    base,
                    used=used,
                    estimated=True,
                    describes="next request",
                    streaming=True,
                    categories=categories,
                )
            )
        )

    def settle(self) -> None:
        """A run ended (answered, cancelled or failed): the gauge shows the next request."""
        self.tracker.settle()
        self._reasoning = 0  # the reasoning is released: the next request does not carry it
        self.emit_report()


# Meta keys of a saved notice that are not among its figures.
_NOTICE_META = frozenset({"level", "marker", "notice_kind"})


def notice_message(event: NoticeEvent) -> Message:
    """A notice as the conversation keeps it: its level, marker, kind and figures in meta,
    so what it reports is read back from the meta, never parsed out of its text."""
    message = notice(event.text, event.level)
    if event.marker:
        message = message.with_meta(marker=event.marker)
    if event.kind:
        message = message.with_meta(notice_kind=event.kind, **event.details)
    return message


def keeping_notices(save_notice: Callable[[Message], None], emit: EventSink) -> EventSink:
    """A sink for a part of the session that tells notices of its own (the MCP hub): its
    notices are kept in the conversation, with their kind and figures, and told by
    `save_notice`; its other events are only told."""

    def sink(event: Event) -> None:
        if isinstance(event, NoticeEvent) and not event.transient:
            save_notice(notice_message(event))
        else:
            emit(event)

    return sink


def notice_event(message: Message) -> NoticeEvent:
    """The event a saved notice is told by: the inverse of `notice_message`."""
    meta = dict(message.meta)
    return NoticeEvent(
        level=meta.get("level", "info"),
        text=message.content,
        marker=str(meta.get("marker", "") or ""),
        kind=notice_kind(meta.get("notice_kind")),
        details={k: v for k, v in meta.items() if k not in _NOTICE_META}
        if meta.get("notice_kind")
        else {},
    )
