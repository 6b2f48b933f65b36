"""The ladder's events for the compact, fit and trim rungs: their words (notices.py) with the
figures a view or a script reads (kept apart from notices.py, which the report imports, so
the events module's import of the report draws no circle)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.context.compaction import CompactionResult
from engine.context.fitting import FitResult
from engine.context.notices import compacted_notice, fit_notice, trim_notice
from engine.context.restore import replaced_for_reading
from engine.events import (
    NOTICE_COMPACTED,
    NOTICE_CUT_TO_FIT,
    NOTICE_TRIMMED,
    CompactionEvent,
    Event,
    NoticeEvent,
)
from engine.messages import Message


def compaction_finished_events(result: CompactionResult, before: Sequence[Message]) -> list[Event]:
    """A compaction that rebuilt `before`: its finished event and its notice, with the
    figures (the messages Show / Restore will list as replaced counted the same way)."""
    details: dict[str, int | str] = {
        "messages_before": result.messages_before,
        "messages_after": result.messages_after,
        "tokens_saved": result.tokens_saved,
        "compaction": result.checkpoint_id,
        "summary": result.source,
    }
    text = compacted_notice(
        result.messages_before,
        result.messages_after,
        result.tokens_saved,
        mechanical=result.source == "mechanical",
    )
    return [
        CompactionEvent(
            phase="finished",
            reason=result.reason,
            messages_before=result.messages_before,
            messages_after=result.messages_after,
            messages_replaced=len(replaced_for_reading(before, result.messages)),
            tokens_saved=result.tokens_saved,
            compaction=result.checkpoint_id,
            summary=result.source,
        ),
        NoticeEvent(level="info", text=text, kind=NOTICE_COMPACTED, details=details),
    ]


def fitted_event(result: FitResult, window: int) -> NoticeEvent:
    """The fit rung's notice: what it cut so the request fits, counted."""
    return NoticeEvent(
        level="warning",
        text=fit_notice(result.results_cut, result.arguments_cut, result.calls_dropped, window),
        kind=NOTICE_CUT_TO_FIT,
        details={
            "results_cut": result.results_cut,
            "arguments_cut": result.arguments_cut,
            "calls_left_out": result.calls_dropped,
            "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after,
            "window": window,
        },
    )


def trimmed_event(dropped: int) -> NoticeEvent:
    """The trim rung's notice: what it discarded without a summary, counted."""
    return NoticeEvent(
        level="warning",
        text=trim_notice(dropped),
        kind=NOTICE_TRIMMED,
        details={"messages_dropped": dropped},
    )
