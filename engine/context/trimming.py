"""The trim rung: drop the oldest messages that fit no budget, without a summary.

Trimming is lossy and rewrites the start of the history (which invalidates the engine's
cached prefix), so it sits above compaction: it fires at 95% of the budget, or when
compaction could not run. The algorithm, in units (an assistant tool call together
with its results, see `history`):

1. The system prompt, later system messages, and pinned, task, summary and continuation
   messages always survive.
2. The last N complete turns (a user message plus everything after it until the next user
   message) are protected.
3. Walking backwards from just before the protected zone, units are kept while they fit;
   the first one that does not fit ends the walk, so no hole opens in the middle.

An agent run is often one long turn, so the protected zone alone may not fit. Then it
yields, because an overflowing request helps nobody: turns are given up oldest first, and
when even the last turn does not fit, it keeps its user message (the request being worked
on) and its newest units while they fit. The newest unit is always kept. The result fits
the budget except when the fixed messages, the last user message and the newest unit alone
exceed it; `TrimResult.fits` says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from engine.context.constants import PROTECTED_TURNS
from engine.context.history import CountMessage, Unit, group_units, is_fixed, is_turn_start
from engine.messages import Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrimResult:
    messages: list[Message]
    dropped: int
    tokens_before: int
    tokens_after: int
    fits: bool  # tokens_after <= budget


def trim_messages(
    messages: Sequence[Message],
    *,
    budget: int,
    count_message: CountMessage,
    protected_turns: int = PROTECTED_TURNS,
) -> TrimResult:
    """Drop whole units, oldest first outside the protected zone, until the history fits
    `budget` tokens (counted with `count_message`). A history that fits comes back as is."""
    tokens = [count_message(m) for m in messages]
    total = sum(tokens)
    if total <= budget:
        return TrimResult(list(messages), 0, total, total, True)

    units = group_units(messages)
    cost = [sum(tokens[i] for i in u) for u in units]
    fixed = [any(is_fixed(messages[i]) for i in u) for u in units]
    starts = [k for k, u in enumerate(units) if not fixed[k] and is_turn_start(messages[u[0]])]
    fixed_cost = sum(c for c, f in zip(cost, fixed, strict=True) if f)

    keep: set[int] | None = None
    for n in range(max(protected_turns, 1), 0, -1):
        zone = starts[-n] if len(starts) >= n else (starts[0] if starts else len(units))
        keep = _keep_before_zone(units, cost, fixed, zone, budget - fixed_cost)
        if keep is not None:
            break
    if keep is None:
        keep = _keep_inside_last_turn(units, cost, fixed, starts, budget - fixed_cost)

    kept_units = [u for k, u in enumerate(units) if k in keep or fixed[k]]
    out = [messages[i] for u in kept_units for i in u]
    after = sum(tokens[i] for u in kept_units for i in u)
    dropped = len(messages) - len(out)
    if dropped:
        log.debug("trimmed %d messages (%d -> %d tokens, budget %d)", dropped, total, after, budget)
    return TrimResult(out, dropped, total, after, after <= budget)


def _keep_before_zone(
    units: list[Unit], cost: list[int], fixed: list[bool], zone: int, room: int
) -> set[int] | None:
    """The walk: protect units from `zone` on, then keep older units while they fit.
    None when the protected zone alone does not fit."""
    keep = {k for k in range(zone, len(units)) if not fixed[k]}
    if not keep:
        # No protected turn at all: the newest unit still stays.
        newest = _newest_free(fixed, len(units))
        if newest is not None:
            keep.add(newest)
    room -= sum(cost[k] for k in keep)
    if room < 0:
        return None
    for k in range(min(zone, len(units)) - 1, -1, -1):
        if fixed[k] or k in keep:
            continue
        if cost[k] > room:
            break
        keep.add(k)
        room -= cost[k]
    return keep


def _keep_inside_last_turn(
    units: list[Unit], cost: list[int], fixed: list[bool], starts: list[int], room: int
) -> set[int]:
    """The last turn alone does not fit: keep its user message and its newest units while
    they fit. The newest unit is always kept."""
    keep: set[int] = set()
    floor = 0
    if starts:
        floor = starts[-1] + 1
        keep.add(starts[-1])
        room -= cost[starts[-1]]
    newest = _newest_free(fixed, len(units))
    for k in range(len(units) - 1, floor - 1, -1):
        if fixed[k]:
            continue
        if k != newest and cost[k] > room:
            break
        keep.add(k)
        room -= cost[k]
    return keep


def _newest_free(fixed: list[bool], n: int) -> int | None:
    for k in range(n - 1, -1, -1):
        if not fixed[k]:
            return k
    return None
