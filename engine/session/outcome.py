"""What the summarize_context tool answers the model: the truth about the compaction it
asked for, in figures."""

from __future__ import annotations

from engine.context import LadderOutcome


def describe_outcome(outcome: LadderOutcome) -> str:
    """The model is told the truth about the compaction it asked for."""
    result = outcome.compaction
    sizes = f"{outcome.tokens_before:,} → {outcome.tokens_after:,} tokens"
    if result is not None and result.ok:
        return (
            f"Compacted {result.messages_before} → {result.messages_after} messages ({sizes}): "
            "the older messages are replaced by the checkpoint in the system message."
        )
    why = "nothing old enough to summarize"
    if result is not None and result.detail:
        why = result.detail
    if outcome.trimmed:
        return (
            f"Not compacted: {why}. {outcome.trimmed} older messages were dropped without a "
            f"summary instead ({sizes})."
        )
    return f"Not compacted: {why}. The context is unchanged ({outcome.tokens_before:,} tokens)."
