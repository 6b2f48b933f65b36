"""The `ContextLedger` as an object: fed events, it keeps the rail's books, warns at 70% once,
and saves the ladder's notices with their kind and figures (no session, no engine)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.context.budget import ContextBudget
from engine.context.constants import REASON_MANUAL, REASON_PREFLIGHT
from engine.context.notices import compacted_notice, preflight_notice, trim_notice
from engine.events import (
    NOTICE_AUTO_COMPACTING,
    NOTICE_COMPACTED,
    NOTICE_COMPACTION_FALLBACK,
    NOTICE_TRIMMED,
    CompactionEvent,
    ContextEvent,
    ContextReportEvent,
    Event,
    NoticeEvent,
    StateEvent,
    TrimEvent,
)
from engine.messages import Message
from engine.report.context_report import MARKER_COMPACTION, MARKER_TRIM, build_context_report
from engine.session import ContextLedger, LedgerInputs
from engine.session.ledger import notice_event, notice_message

WINDOW = 10_000


@dataclass
class Rail:
    """A ledger on a fixed budget, with what it emitted and what it saved."""

    events: list[Event] = field(default_factory=list)
    saved: list[Message] = field(default_factory=list)
    estimate: int = 8_000
    manual: bool = False

    def __post_init__(self) -> None:
        budget = ContextBudget(WINDOW)
        self.ledger = ContextLedger(
            LedgerInputs(
                report=lambda: build_context_report(
                    budget=budget, source="server", estimate=self.estimate, tracker=self.tracker
                ),
                budget=lambda: budget,
                window=lambda: WINDOW,
                estimate_now=lambda: self.estimate,
                manual_compaction=lambda: self.manual,
            ),
            emit=self.emit,
            save_notice=self.save,
        )

    @property
    def tracker(self):  # type: ignore[no-untyped-def]
        return self.ledger.tracker

    def emit(self, event: Event) -> None:  # as the session does: the sink, then the ledger
        self.events.append(event)
        self.ledger.observe(event)

    def save(self, message: Message) -> None:
        self.saved.append(message)
        self.emit(notice_event(message))

    def notices(self) -> list[NoticeEvent]:
        return [e for e in self.events if isinstance(e, NoticeEvent)]


def _landed(used: int) -> ContextEvent:
    return ContextEvent(used=used, window=WINDOW, percent=100 * used / WINDOW, source="server")


def test_a_landed_request_past_70_percent_warns_once_and_sends_the_rail_a_report():
    rail = Rail()
    rail.emit(_landed(7_500))
    rail.emit(_landed(7_600))
    warnings = [m.content for m in rail.saved if "70% mark" in m.content]
    assert len(warnings) == 1
    reports = [e for e in rail.events if isinstance(e, ContextReportEvent)]
    assert len(reports) == 2 and reports[-1].report.used == 7_600
    assert [p.used for p in rail.tracker.points] == [7_500, 7_600]


def test_a_finished_compaction_is_saved_as_the_row_with_its_figures():
    rail = Rail(estimate=9_000)
    ladder = rail.ledger.on_ladder_event
    ladder(
        NoticeEvent(
            "warning",
            preflight_notice(8_600, WINDOW),
            kind=NOTICE_AUTO_COMPACTING,
            details={"used": 8_600, "window": WINDOW},
        )
    )
    ladder(CompactionEvent(phase="started", reason=REASON_PREFLIGHT, messages_before=40))
    assert StateEvent("compacting") in rail.events
    ladder(
        CompactionEvent(
            phase="finished",
            reason=REASON_PREFLIGHT,
            messages_before=40,
            messages_after=9,
            tokens_saved=5_000,
        )
    )
    details = {"messages_before": 40, "messages_after": 9, "tokens_saved": 5_000}
    ladder(
        NoticeEvent("info", compacted_notice(40, 9, 5_000), kind=NOTICE_COMPACTED, details=details)
    )
    # The ladder's own two lines go out transient; only the row is saved.
    transient = [e.kind for e in rail.notices() if e.transient]
    assert transient == [NOTICE_AUTO_COMPACTING, NOTICE_COMPACTED]
    assert len(rail.saved) == 1
    row = rail.saved[0]
    assert row.content.startswith("auto-compacted 40 -> 9 messages (ctx 9K/10K)")
    assert row.meta_value("marker") == MARKER_COMPACTION
    assert row.meta_value("notice_kind") == NOTICE_COMPACTED
    assert (row.meta_value("messages_before"), row.meta_value("messages_after")) == (40, 9)
    told = rail.notices()[-1]
    assert (told.marker, told.kind, told.details) == (MARKER_COMPACTION, NOTICE_COMPACTED, details)
    assert [(m.kind, m.detail) for m in rail.tracker.markers] == [
        (MARKER_COMPACTION, "40 -> 9 messages")
    ]


def test_a_compact_the_agent_asked_for_says_so_and_one_the_user_asked_for_does_not():
    for manual, phrase in ((False, "the agent asked for it"), (True, "you asked for it")):
        rail = Rail(manual=manual)
        rail.ledger.on_ladder_event(CompactionEvent(phase="started", reason=REASON_MANUAL))
        rail.ledger.on_ladder_event(
            CompactionEvent(
                phase="finished", reason=REASON_MANUAL, messages_before=5, messages_after=2
            )
        )
        rail.ledger.on_ladder_event(
            NoticeEvent(
                "info",
                compacted_notice(5, 2, 10),
                kind=NOTICE_COMPACTED,
                details={"messages_before": 5, "messages_after": 2, "tokens_saved": 10},
            )
        )
        assert phrase in rail.saved[0].content
        assert rail.saved[0].content.startswith("compacted 5 -> 2 messages")


def test_a_trim_is_saved_with_its_marker_and_count_and_a_fallback_only_when_it_dropped():
    rail = Rail()
    rail.ledger.on_ladder_event(TrimEvent(messages_dropped=3))
    rail.ledger.on_ladder_event(
        NoticeEvent("warning", trim_notice(3), kind=NOTICE_TRIMMED, details={"messages_dropped": 3})
    )
    rail.ledger.on_ladder_event(
        NoticeEvent(
            "warning",
            "Could not compact (x): the conversation was left as it was",
            kind=NOTICE_COMPACTION_FALLBACK,
            details={"messages_dropped": 0},
        )
    )
    trimmed, left = rail.saved
    assert trimmed.meta_value("marker") == MARKER_TRIM
    assert trimmed.meta_value("messages_dropped") == 3
    assert left.meta_value("marker") is None
    assert left.meta_value("notice_kind") == NOTICE_COMPACTION_FALLBACK
    assert [(m.kind, m.detail) for m in rail.tracker.markers] == [(MARKER_TRIM, "3 messages")]


def test_reset_forgets_the_last_conversations_rail():
    rail = Rail()
    rail.emit(_landed(7_500))
    rail.ledger.reset(resumed=True)
    assert rail.tracker.points == [] and rail.tracker.resumed
    rail.emit(_landed(7_500))  # the warning is armed again for the new conversation
    assert len([m for m in rail.saved if "70% mark" in m.content]) == 2


def test_a_saved_notice_tells_the_same_event_it_was_saved_from():
    event = NoticeEvent(
        "warning", trim_notice(2), MARKER_TRIM, kind=NOTICE_TRIMMED, details={"messages_dropped": 2}
    )
    assert notice_event(notice_message(event)) == event
    plain = NoticeEvent("info", "Turn cancelled.")
    assert notice_event(notice_message(plain)) == plain


def test_the_70_percent_warning_never_promises_room_the_rail_says_is_gone():
    rail = Rail(estimate=8_300)  # the answer took the history past auto-compact (80%)
    rail.emit(_landed(7_500))  # the request itself was under it
    (warning,) = [m.content for m in rail.saved if "70% mark" in m.content]
    assert "tokens from here" not in warning
    assert "the next request is compacted before it is sent" in warning
    rail.ledger.settle()  # the turn ended: the rail shows the history with its answer
    report = [e for e in rail.events if isinstance(e, ContextReportEvent)][-1].report
    assert report.headroom_line().startswith("Past auto-compact")


def test_the_reasoning_is_its_own_part_of_the_rail_while_the_answer_streams_then_released():
    from engine.events import AnswerProgressEvent
    from engine.session.ledger import CATEGORY_REASONING

    rail = Rail(estimate=3_000)
    rail.emit(_landed(3_000))
    rail.emit(AnswerProgressEvent(prompt_tokens=3_000, completion_tokens=420, window=WINDOW,
                                  reasoning_tokens=400))  # fmt: skip
    streaming = [e for e in rail.events if isinstance(e, ContextReportEvent)][-1].report
    assert streaming.streaming and streaming.used == 3_420
    parts = {c.name: c.tokens for c in streaming.categories}
    assert parts[CATEGORY_REASONING] == 400
    rail.ledger.settle()  # the turn ended: the reasoning is not sent back
    after = [e for e in rail.events if isinstance(e, ContextReportEvent)][-1].report
    assert CATEGORY_REASONING not in {c.name for c in after.categories}
    rail.emit(AnswerProgressEvent(prompt_tokens=3_100, completion_tokens=20, window=WINDOW))
    plain = [e for e in rail.events if isinstance(e, ContextReportEvent)][-1].report
    assert CATEGORY_REASONING not in {c.name for c in plain.categories}
