"""The tool calls of one answer as the loop runs them: a bounded number, each id its own.

A model (or an engine) can ask for ten thousand calls in one answer; run one by one they
would take the turn for hours and fill the window many times over. So at most
`MAX_CALLS_PER_ANSWER` run; the first call past the cap stays in the saved answer and is
answered "not run" for itself and every call after it (the others are dropped), so the
model learns what happened and every call it sees has its result. Two calls with the same
id would leave their results ambiguous (the result is matched to its call by id): a
repeated or empty id is replaced by a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.agent.types import ToolRun
from engine.messages import ToolCall
from engine.providers.openai_compat import new_call_id

MAX_CALLS_PER_ANSWER = 64


@dataclass(frozen=True)
class TakenCalls:
    """`calls` as saved with the answer; with `not_run` > 0 the last of them stands for
    the `not_run` calls past the cap (itself included) and is answered, not run."""

    calls: tuple[ToolCall, ...]
    not_run: int = 0
    renamed: int = 0  # ids replaced because they repeated an earlier one (or were empty)


def take_calls(calls: tuple[ToolCall, ...], cap: int = MAX_CALLS_PER_ANSWER) -> TakenCalls:
    """The calls of one answer, at most `cap` to run plus one answered "not run"."""
    seen: set[str] = set()
    kept: list[ToolCall] = []
    renamed = 0
    for call in calls[: cap + 1]:
        if not call.id or call.id in seen:
            call = replace(call, id=new_call_id())
            renamed += 1
        seen.add(call.id)
        kept.append(call)
    not_run = max(0, len(calls) - cap)
    return TakenCalls(tuple(kept), not_run, renamed)


def not_run_result(not_run: int, *, ran: int, cap: int = MAX_CALLS_PER_ANSWER) -> ToolRun:
    """The answer to the call that stands for the `not_run` calls past the cap (the model
    reads it), after `ran` calls ran."""
    others = not_run - 1
    rest = f"this call and the {others:,} after it" if others else "this call"
    text = (
        f"Not run: this answer asked for {ran + not_run:,} tool calls and at most {cap} run "
        f"per answer, so {rest} did not run (the first {ran} did). Ask again for what is "
        "still needed, fewer calls at a time."
    )
    return ToolRun(text, len(text), False, True)


def calls_capped(not_run: int, *, ran: int) -> tuple[str, dict[str, int | str]]:
    """The notice the user sees, and its figures."""
    total = ran + not_run
    text = (
        f"The model asked for {total:,} tool calls in one answer; the first {ran} ran and "
        f"the other {not_run:,} did not (at most {MAX_CALLS_PER_ANSWER} per answer)."
    )
    return text, {"calls": total, "run": ran, "not_run": not_run}
