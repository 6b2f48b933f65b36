"""What a turn leaves in the store: the usage of every request and the turn's receipt
(with the `turn_end` event that tells it). A failed write is logged, never raised: the turn
already answered."""

from __future__ import annotations

import logging

from engine.agent.types import Totals, TurnOutcome
from engine.events import TurnEndEvent
from engine.providers.base import Usage
from engine.store import Store

log = logging.getLogger(__name__)


def record_usage(
    store: Store | None,
    conversation_id: str,
    *,
    agent: str,
    provider: str,
    model: str,
    usage: Usage,
) -> None:
    """One chat request's usage, for `/usage` and the rail's saved timeline."""
    if store is None:
        return
    try:
        store.record_usage(
            conversation_id,
            agent=agent,
            provider=provider,
            model=model or "default",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
        )
    except Exception:
        log.exception("could not record usage")


def tokens_per_second(outcome: TurnOutcome, totals: Totals) -> float:
    seconds = totals.eval_s or totals.generating_s
    return outcome.completion_tokens / seconds if seconds > 0 else 0.0


def turn_end_event(outcome: TurnOutcome, totals: Totals) -> TurnEndEvent:
    """The receipt as the turn tells it (rounded as a reopened conversation shows it)."""
    return TurnEndEvent(
        elapsed_s=round(outcome.elapsed_s, 3),
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        tokens_per_s=round(tokens_per_second(outcome, totals), 2),
        cached_tokens=outcome.cached_tokens,
        finish_reason=outcome.finish_reason,
    )


def record_receipt(
    store: Store | None, conversation_id: str, outcome: TurnOutcome, totals: Totals
) -> None:
    """The turn's receipt, kept for when the conversation is shown again."""
    if store is None:
        return
    try:
        store.record_receipt(
            conversation_id,
            elapsed_s=outcome.elapsed_s,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            tokens_per_s=tokens_per_second(outcome, totals),
            cached_tokens=outcome.cached_tokens,
        )
    except Exception:
        log.exception("could not record the turn receipt")
