"""The clear rung: stub old, large tool results so the model keeps its place, not the bulk.

Clearing costs no tokens but is not free: a stubbed result is evidence the model no longer
has, and every rewrite moves the engine's cached prefix. So it only runs above 50% (the
manager decides that), only touches results outside the protected window (the five most
recent tool cycles), and rewrites each result at most once (`cleared` sticks in the
message's meta), so the prefix only jumps when a result actually ages out of the window.

A message is never removed here, only its content replaced: removing it would orphan the
tool call that produced it. The original body is stored first through `store_result`, so
the placeholder can name `retrieve_tool_result`; when the store fails (read-only disk, a
locked-down container) the placeholder tells the model to re-run the original tool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from engine.context.constants import (
    LARGE_TOOL_RESULT_TOKENS,
    PROTECTED_TOOL_CYCLES,
    RETRIEVE_TOOL,
)
from engine.context.history import CountMessage
from engine.messages import Message, ToolCall

log = logging.getLogger(__name__)

StoreResult = Callable[[str, str], bool]  # (tool_call_id, text) -> stored?

MAX_ARGS_IN_PLACEHOLDER = 200


@dataclass(frozen=True)
class ClearResult:
    messages: list[Message]
    cleared: int = 0  # results stubbed in this pass
    stored: int = 0  # of those, how many the store kept for retrieve_tool_result
    tokens_reclaimed: int = 0
    cleared_ids: tuple[str, ...] = field(default=())


def protected_window_start(messages: Sequence[Message], cycles: int = PROTECTED_TOOL_CYCLES) -> int:
    """Index of the assistant message that opened the `cycles`-th most recent tool cycle;
    everything from there to the end is protected. 0 when there are that few cycles."""
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role == "assistant" and msg.tool_calls:
            seen += 1
            if seen == cycles:
                return i
    return 0


def placeholder_text(call: ToolCall | None, tool_call_id: str, tokens: int, stored: bool) -> str:
    name = call.name if call else "tool"
    if stored:
        return (
            f"[Cleared to save context: this {name} result (~{tokens} tokens) was removed "
            f"from the conversation. Call {RETRIEVE_TOOL} with "
            f'tool_call_id "{tool_call_id}" to read it again.]'
        )
    args = call.arguments if call else ""
    if len(args) > MAX_ARGS_IN_PLACEHOLDER:
        args = args[:MAX_ARGS_IN_PLACEHOLDER] + "…"
    return (
        f"[Cleared to save context: this {name} result (~{tokens} tokens) was removed "
        f"from the conversation and could not be saved. If you need it again, re-run "
        f"the original tool call: {name} {args}]".rstrip()
    )


def _try_store(store: StoreResult | None, tool_call_id: str, text: str) -> bool:
    if store is None:
        return False
    try:
        return bool(store(tool_call_id, text))
    except Exception:  # a full or read-only disk must not stop the run
        log.warning("could not store tool result %s for retrieval", tool_call_id, exc_info=True)
        return False


def clear_tool_results(
    messages: Sequence[Message],
    *,
    count_message: CountMessage,
    store_result: StoreResult | None = None,
    protected_cycles: int = PROTECTED_TOOL_CYCLES,
    min_tokens: int = LARGE_TOOL_RESULT_TOKENS,
) -> ClearResult:
    """Stub every tool result older than the protected window whose own count exceeds
    `min_tokens` and which was never cleared before. Returns a new list of the same length;
    the caller decides whether usage is high enough (above 50%) to call this at all."""
    start = protected_window_start(messages, protected_cycles)
    calls: dict[str, ToolCall] = {
        call.id: call for m in messages[:start] if m.role == "assistant" for call in m.tool_calls
    }
    out = list(messages)
    cleared = stored_count = reclaimed = 0
    ids: list[str] = []
    for i in range(start):
        msg = messages[i]
        if msg.role != "tool" or msg.meta_value("cleared") or not msg.tool_call_id:
            continue
        before = count_message(msg)
        if before <= min_tokens:
            continue
        stored = _try_store(store_result, msg.tool_call_id, msg.content)
        text = placeholder_text(calls.get(msg.tool_call_id), msg.tool_call_id, before, stored)
        new = replace(msg, content=text).with_meta(cleared=True, stored=stored, original=before)
        out[i] = new
        cleared += 1
        stored_count += int(stored)
        reclaimed += max(0, before - count_message(new))
        ids.append(msg.tool_call_id)
    if cleared:
        log.debug("cleared %d tool results, ~%d tokens reclaimed", cleared, reclaimed)
    return ClearResult(out, cleared, stored_count, reclaimed, tuple(ids))
