"""The shape of a history that every rung must respect.

An assistant message that asked for tools and the results of those calls are one *unit*:
a history holding a tool call with no result (or a result with no call) is refused by most
engines several iterations after the damage. Every rung that removes messages removes
whole units, so that failure is structurally impossible rather than something to remember.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.messages import PROTECTED_KINDS, Message

CountMessage = Callable[[Message], int]
Unit = tuple[int, ...]  # indices into the history, contiguous and in order


def is_fixed(message: Message) -> bool:
    """Messages no rung may drop: the system prompt (and any later system message, a changed
    stable prompt), and pinned, task, summary and continuation messages."""
    return message.role == "system" or message.kind in PROTECTED_KINDS


def is_turn_start(message: Message) -> bool:
    """A turn starts at a user message the person wrote (not a pinned task or a
    continuation nudge, which are user-role bookkeeping)."""
    return message.role == "user" and message.kind == "chat"


def group_units(messages: Sequence[Message]) -> list[Unit]:
    """Split a history into units: an assistant with tool calls plus the tool results that
    directly follow it and answer one of its calls; every other message alone."""
    units: list[Unit] = []
    i = 0
    n = len(messages)
    while i < n:
        msg = messages[i]
        if msg.role == "assistant" and msg.tool_calls:
            ids = {call.id for call in msg.tool_calls}
            j = i + 1
            while j < n and messages[j].role == "tool" and messages[j].tool_call_id in ids:
                j += 1
            units.append(tuple(range(i, j)))
            i = j
        else:
            units.append((i,))
            i += 1
    return units


def tool_pairing_problems(messages: Sequence[Message]) -> list[str]:
    """Everything an engine would reject about tool pairing, as readable lines (empty when
    the history is sound): every call answered by a result right after its assistant
    message, every result answering a call of the assistant message just before it."""
    problems: list[str] = []
    for unit in group_units(messages):
        head = messages[unit[0]]
        if head.role == "assistant" and head.tool_calls:
            # group_units takes in only results whose id answers one of these calls.
            answered = [cid for i in unit[1:] if (cid := messages[i].tool_call_id) is not None]
            for call in head.tool_calls:
                if call.id not in answered:
                    problems.append(f"message {unit[0]}: tool call {call.id} has no result")
            dupes = {cid for cid in answered if answered.count(cid) > 1}
            problems.extend(f"tool call {cid} has more than one result" for cid in sorted(dupes))
        elif head.role == "tool":
            problems.append(f"message {unit[0]}: tool result {head.tool_call_id} has no call")
    return problems


def total_tokens(messages: Sequence[Message], count_message: CountMessage) -> int:
    return sum(count_message(m) for m in messages)
