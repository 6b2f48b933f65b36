"""The fit rung: the ladder's last resort, which holds every request within the window.

Trimming and compaction keep the newest unit whole (an assistant message with the results
of its calls: splitting a call from its result breaks the history, engine/context/history.py)
and clearing protects the last five tool cycles. So one answer that asked for 300 files, or
one write_file call carrying 100 KB of arguments, went out whole, far above the window. This
rung runs after them, only when the request is still above its budget, and cuts what it
must to the room left, always with a marker the model can act on:

1. long string values in tool-call arguments are cut (the JSON stays valid), each with a
   marker naming its full length;
2. tool results share the room left: the small ones stay whole, the others are cut to an
   equal share, each stored whole first and ending with the cut notice that names
   `retrieve_tool_result`, the call id and the offset to read on from;
3. when an answer made more calls than the window can show even that way, it keeps its
   first calls (each result at least a short head) and the others leave the history with
   their results (the store archives them); the last kept result says how many ran unseen.

A text is never cut to nothing and a message is never split from its pair, so the history
stays one an engine accepts. `FitResult.fits` is False only when what no rung may touch (the
system prompt, the user's own messages, the checkpoint) is itself above the budget.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.context.clearing import StoreResult
from engine.context.cut_marks import cut_notice, short_cut_notice, split_cut_notice
from engine.context.history import CountMessage
from engine.messages import Message, ToolCall

log = logging.getLogger(__name__)

# A string value in a tool call's arguments longer than this is cut to it (characters).
ARGUMENT_KEEP_CHARS = 240
# Every result of a kept call shows at least this many tokens of itself (or all of it).
RESULT_FLOOR_TOKENS = 96
# How many times a cut is measured and tightened before the short notice alone stands in.
CUT_TRIES = 4


@dataclass(frozen=True)
class FitResult:
    messages: list[Message]
    tokens_before: int
    tokens_after: int
    budget: int
    results_cut: int = 0
    arguments_cut: int = 0
    calls_dropped: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.results_cut or self.arguments_cut or self.calls_dropped)

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.budget


def fit_messages(
    messages: Sequence[Message],
    *,
    budget: int,
    count_message: CountMessage,
    store_result: StoreResult | None = None,
) -> FitResult:
    """The history cut, as little as it can be, so its messages count at most `budget`."""
    msgs = list(messages)
    before = sum(map(count_message, msgs))
    if before <= budget:
        return FitResult(msgs, before, before, budget)
    msgs, arguments_cut = _cut_arguments(msgs, count_message, before - budget)
    dropped = 0
    if sum(map(count_message, msgs)) > budget:
        msgs, dropped = _drop_unseen_calls(msgs, budget, count_message)
    results_cut = 0
    if sum(map(count_message, msgs)) > budget:
        msgs, results_cut = _share_room(msgs, budget, count_message, store_result)
    after = sum(map(count_message, msgs))
    log.debug(
        "fit %d -> %d tokens (budget %d): %d results cut, %d arguments cut, %d calls dropped",
        before,
        after,
        budget,
        results_cut,
        arguments_cut,
        dropped,
    )
    return FitResult(msgs, before, after, budget, results_cut, arguments_cut, dropped)


# -- 1. arguments -------------------------------------------------------------------------


def argument_marker(length: int) -> str:
    return f"…[cut to fit the context window: {length:,} characters in all]"


def _cut_value(value: Any) -> tuple[Any, int]:
    if isinstance(value, str) and len(value) > ARGUMENT_KEEP_CHARS:
        return value[:ARGUMENT_KEEP_CHARS] + argument_marker(len(value)), 1
    if isinstance(value, dict):
        out, cut = {}, 0
        for key, item in value.items():
            out[key], n = _cut_value(item)
            cut += n
        return out, cut
    if isinstance(value, list):
        pairs = [_cut_value(item) for item in value]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    return value, 0


def cut_call_arguments(call: ToolCall) -> tuple[ToolCall, int]:
    """The call with its long string arguments cut; arguments that are not JSON and long
    become one cut string under "arguments", so what is sent stays an object."""
    if len(call.arguments) <= ARGUMENT_KEEP_CHARS:
        return call, 0
    try:
        parsed = json.loads(call.arguments)
    except (json.JSONDecodeError, RecursionError):
        parsed = {"arguments": call.arguments}
    if not isinstance(parsed, dict):
        parsed = {"arguments": call.arguments}
    value, cut = _cut_value(parsed)
    if not cut:
        return call, 0
    return replace(call, arguments=json.dumps(value, ensure_ascii=False)), cut


def _cut_arguments(
    msgs: list[Message], count_message: CountMessage, excess: int
) -> tuple[list[Message], int]:
    """Cut the arguments of the assistant messages, newest first, until `excess` tokens
    are gone or none is left to cut."""
    out = list(msgs)
    cut = 0
    for i in range(len(out) - 1, -1, -1):
        if excess <= 0:
            break
        message = out[i]
        if message.role != "assistant" or not message.tool_calls:
            continue
        pairs = [cut_call_arguments(call) for call in message.tool_calls]
        n = sum(p[1] for p in pairs)
        if not n:
            continue
        new = replace(message, tool_calls=tuple(p[0] for p in pairs)).with_meta(arguments_cut=True)
        excess -= count_message(message) - count_message(new)
        out[i] = new
        cut += n
    return out, cut


# -- 2. results share the room ------------------------------------------------------------


def _share(costs: list[int], room: int) -> int:
    """The largest cap such that every cost at most the cap stays whole and the others
    at the cap fit `room` together (water-filling)."""
    remaining = room
    ordered = sorted(costs)
    for k, cost in enumerate(ordered):
        share = remaining // (len(ordered) - k)
        if cost > share:
            return max(0, share)
        remaining -= cost
    return max(ordered, default=0)


def _store(store: StoreResult | None, tool_call_id: str | None, text: str) -> bool:
    if store is None or not tool_call_id:
        return False
    try:
        return bool(store(tool_call_id, text))
    except Exception:  # a full or read-only disk must not stop the run
        log.warning("could not store tool result %s for retrieval", tool_call_id, exc_info=True)
        return False


def cut_result(
    message: Message, tokens: int, count_message: CountMessage, store: StoreResult | None
) -> Message:
    """A tool result cut to about `tokens` (its framing and notice included): its head,
    then the notice. Stored whole first (a result cut at insertion keeps its stored whole)."""
    note = message.meta_value("fit_note") or ""
    body = message.content[: len(message.content) - len(note)] if note else message.content
    head_text, named_total = split_cut_notice(body)
    stored = _store(store, message.tool_call_id, body)
    total = named_total or len(head_text)
    name = message.name or "the tool"
    cost = max(1, count_message(message))
    chars = int(len(body) * tokens / cost)
    for _ in range(CUT_TRIES):
        kept = max(0, min(chars, len(head_text)))
        notice = cut_notice(name, kept, total, message.tool_call_id, stored)
        head = head_text[:kept]
        text = (head if head.endswith("\n") or not head else head + "\n") + notice + note
        new = replace(message, content=text)
        over = count_message(new) - tokens
        if over <= 0 or kept == 0:
            break
        chars = int(kept * (1 - over / max(1, count_message(new)))) - 16
    if count_message(new) > tokens:
        new = replace(message, content=short_cut_notice(total, message.tool_call_id, stored) + note)
    return new.with_meta(cut_to_fit=True, stored=stored)


def _share_room(
    msgs: list[Message], budget: int, count_message: CountMessage, store: StoreResult | None
) -> tuple[list[Message], int]:
    results = [i for i, m in enumerate(msgs) if m.role == "tool"]
    if not results:
        return msgs, 0
    costs = [count_message(msgs[i]) for i in results]
    room = budget - (sum(map(count_message, msgs)) - sum(costs))
    cap = _share(costs, room)
    out = list(msgs)
    cut = 0
    for i, cost in zip(results, costs, strict=True):
        if cost > cap:
            out[i] = cut_result(msgs[i], cap, count_message, store)
            cut += 1
    return out, cut


# -- 3. calls the window cannot show ------------------------------------------------------


def unseen_calls_note(total: int, kept: int, names: Counter[str]) -> str:
    which = ", ".join(f"{name} ×{n}" for name, n in sorted(names.items()))
    return (
        f"\n[Cut to fit the context window: this answer made {total:,} tool calls; the "
        f"results of the first {kept:,} are shown, the other {total - kept:,} ({which}) ran "
        "but their results do not fit and are left out. Ask for what you still need a "
        "few calls at a time.]"
    )


def _newest_unit(msgs: list[Message]) -> tuple[int, list[int]] | None:
    """The newest assistant message with calls and the indices of its results after it."""
    for i in range(len(msgs) - 1, -1, -1):
        message = msgs[i]
        if message.role == "assistant" and message.tool_calls:
            ids = {call.id for call in message.tool_calls}
            j = i + 1
            while j < len(msgs) and msgs[j].role == "tool" and msgs[j].tool_call_id in ids:
                j += 1
            return i, list(range(i + 1, j))
    return None


def _drop_unseen_calls(
    msgs: list[Message], budget: int, count_message: CountMessage
) -> tuple[list[Message], int]:
    """Keep the first calls of the newest answer whose results can show at least a head;
    the rest leave what is sent (the store archives them with the full record). Nothing
    changes when every call's result can show its head."""
    found = _newest_unit(msgs)
    if found is None:
        return msgs, 0
    head_at, result_at = found
    answer = msgs[head_at]
    by_id = {msgs[j].tool_call_id: j for j in result_at}
    calls = answer.tool_calls
    others = sum(
        count_message(m) for k, m in enumerate(msgs) if k != head_at and k not in result_at
    )
    floors = [
        min(count_message(msgs[by_id[c.id]]), RESULT_FLOOR_TOKENS) if c.id in by_id else 0
        for c in calls
    ]
    note_room = count_message(replace(answer, content=unseen_calls_note(len(calls), 0, Counter())))

    def cost(k: int) -> int:
        shown = replace(answer, tool_calls=calls[:k])
        return count_message(shown) + sum(floors[:k]) + note_room

    if others + count_message(answer) + sum(floors) <= budget:
        return msgs, 0
    low, high = 1, len(calls)  # the first call always stays: the answer keeps its pair
    while low < high:
        middle = (low + high + 1) // 2
        if others + cost(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    kept = low
    if kept >= len(calls):
        return msgs, 0
    left_out = calls[kept:]
    names = Counter(call.name for call in left_out)
    note = unseen_calls_note(len(calls), kept, names)
    shown_ids = {c.id for c in calls[:kept]}
    new_answer = replace(answer, tool_calls=calls[:kept]).with_meta(calls_made=len(calls))
    kept_results = [msgs[j] for j in result_at if msgs[j].tool_call_id in shown_ids]
    if kept_results:
        last = kept_results[-1]
        kept_results[-1] = replace(last, content=last.content + note).with_meta(fit_note=note)
    after = result_at[-1] + 1 if result_at else head_at + 1
    return [*msgs[:head_at], new_answer, *kept_results, *msgs[after:]], len(left_out)
