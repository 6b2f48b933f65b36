"""The exact words the user sees when the ladder acts. Never silent, always the same text.

The ladder's lines (`Context window ~83% full …: auto-compacting…`, `Compacted 64 → 12
messages …`) are the headless `notice` events; the receipts (`auto-compacted 84 -> 31 messages
(ctx 96K/128K)` and the why-line after it) are the desktop transcript's rows.
"""

from __future__ import annotations

from engine.context.constants import (
    REASON_MANUAL,
    REASON_OVERFLOW,
    REASON_PREFLIGHT,
    REASON_SESSION_BUDGET,
    REASON_SHARED_POOL,
)

REASON_PHRASES: dict[str, str] = {
    REASON_PREFLIGHT: "the prompt neared the context window",
    REASON_OVERFLOW: "the prompt was too long for the engine's window (it refused or cut it)",
    REASON_SESSION_BUDGET: "the run used up its token budget",
    REASON_MANUAL: "you asked for it",
    REASON_SHARED_POOL: (
        "other requests kept the engine's shared KV pool full, so this conversation makes "
        "room for them"
    ),
}


def preflight_notice(used: int, window: int) -> str:
    """`Context window ~83% full (~100,046 of 120,000 tokens): auto-compacting…`"""
    percent = round(100 * used / window) if window else 0
    return f"Context window ~{percent}% full (~{used:,} of {window:,} tokens): auto-compacting…"


# Words for the user of any agent, one with no tools too: what Brim keeps, no tool named.
MECHANICAL_PHRASE = (
    "the summarizer's answer was refused: the checkpoint keeps only what Brim records "
    "itself, such as the user's own statements and the task"
)


def compacted_notice(
    messages_before: int, messages_after: int, tokens_saved: int, *, mechanical: bool = False
) -> str:
    """`Compacted 64 → 12 messages (saved ~48000 tokens)`, and when no summarizer answer
    survived, what the checkpoint holds instead."""
    text = (
        f"Compacted {messages_before} → {messages_after} messages "
        f"(saved ~{max(0, tokens_saved)} tokens)"
    )
    return f"{text}; {MECHANICAL_PHRASE}" if mechanical else text


AGENT_ASKED_PHRASE = "the agent asked for it (summarize_context)"


def compaction_reason_line(
    messages_summarized: int, reason: str, *, asked_by_agent: bool = False
) -> str:
    """`compacted 84 messages into a summary: the prompt neared the context window`. A
    manual compaction the agent asked for (its summarize_context tool) says so; `/compact`
    is the user's."""
    phrase = AGENT_ASKED_PHRASE if asked_by_agent else REASON_PHRASES.get(reason, reason)
    return f"compacted {messages_summarized} messages into a summary: {phrase}"


def trim_notice(messages_dropped: int) -> str:
    noun = "message" if messages_dropped == 1 else "messages"
    return (
        f"Trimmed {messages_dropped} older {noun} to fit the context window "
        f"(discarded without a summary)"
    )


def compaction_fallback_notice(detail: str, messages_dropped: int) -> str:
    """Compaction could not run and the history was trimmed instead: said once, together."""
    why = detail or "compaction could not run"
    if messages_dropped:
        noun = "message" if messages_dropped == 1 else "messages"
        return (
            f"Could not compact ({why}): trimmed {messages_dropped} older {noun} instead, "
            f"discarded without a summary"
        )
    return f"Could not compact ({why}): the conversation was left as it was"


def nothing_to_compact_notice() -> str:
    return "Nothing to compact yet: every message is recent enough to keep as it is"


def fit_notice(results_cut: int, arguments_cut: int, calls_left_out: int, window: int) -> str:
    """The fit rung cut the newest step so the request fits: what it cut, counted."""
    parts = []
    if calls_left_out:
        parts.append(f"left out the results of {calls_left_out:,} tool calls")
    if results_cut:
        noun = "result" if results_cut == 1 else "results"
        parts.append(f"cut {results_cut:,} tool {noun} (stored whole where the disk allowed)")
    if arguments_cut:
        noun = "argument" if arguments_cut == 1 else "arguments"
        parts.append(f"cut {arguments_cut:,} long tool-call {noun}")
    return (
        f"The last step did not fit the {window:,}-token context window: "
        + "; ".join(parts)
        + ". The model is told what was cut and how to read more."
    )
