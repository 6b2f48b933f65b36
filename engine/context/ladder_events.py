"""The ladder's notice events for the fit and trim rungs: their words (notices.py) with the
figures a view or a script reads (kept apart from notices.py, which the report imports, so
the events module's import of the report draws no circle)."""

from __future__ import annotations

from engine.context.fitting import FitResult
from engine.context.notices import fit_notice, trim_notice
from engine.events import NOTICE_CUT_TO_FIT, NOTICE_TRIMMED, NoticeEvent


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
