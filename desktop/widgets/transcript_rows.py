"""The transcript's rows as values: what one row shows, and the rows of a saved
conversation (its messages, its saved receipts under their answers, merged with what was
shown live). No drawing here: desktop/widgets/transcript.py renders the rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from desktop.format import format_receipt
from engine.api import (
    NOTICE_ANSWER_CUT,
    NOTICE_RESTORED,
    NOTICE_SPILL_CHOICE,
    NOTICE_THINKING_CUT,
    Message,
    Receipt,
)

MARKER_COMPACTION = "compaction"
ACTION_CONTINUE = "continue"  # a cut answer's notice: Continue asks for the rest
# A spill_choice notice (on_spill = "ask"): "lower_pin:<window>" offers Lower the pin / Keep it.
ACTION_LOWER_PIN = "lower_pin"
# The notices whose Continue asks for more: an answer cut at its cap, a cap spent thinking.
CONTINUED_KINDS = frozenset({NOTICE_ANSWER_CUT, NOTICE_THINKING_CUT})


@dataclass
class Row:
    """One visible row.

    kind: user | assistant | notice | error | receipt | tool | summary | thinking. A tool
    row's `title` is the call, `detail` its arguments, `text` what the tool returned (a
    preview), `status` how it ended ("" while it runs). A thinking row's `text` is the
    model's reasoning, `title` its folded line (desktop/widgets/thinking_block.py)."""

    kind: str
    text: str
    level: str = "info"
    complete: bool = True
    title: str = ""
    detail: str = ""
    status: str = ""
    key: str = ""  # the tool call id
    marker: str = ""  # a notice's ladder marker: compaction | trim | clear
    expanded: bool = False
    id: int = 0
    message_id: str = ""  # the saved message a user row shows (a memory quote links to it)
    ref: str = ""  # a compaction row's compaction id (its Show / Restore names it)
    restored: bool = False  # a compaction row whose replaced messages were put back
    repeats: int = 1  # an error row met again and again, shown once with its count
    action: str = ""  # a notice's one action (ACTION_CONTINUE), offered until the next message
    dimmed: bool = False  # above the model's last request: compacted or trimmed away


CUT_LABEL = "the model's last request starts here"


def cut_index(rows: Sequence[Row], first_message: str, first_role: str, user_turns: int) -> int:
    """Where the model's last request starts among `rows` (0: nothing above it): at the row
    of its first message where a row shows that message, else counted by the user's rows
    from the end (`user_turns` of them from its first message on; a request that starts
    within a turn starts after that turn's user row)."""
    for index, row in enumerate(rows):
        if first_message and (row.message_id == first_message):
            return index
    users = [i for i, row in enumerate(rows) if row.kind == "user"]
    if not first_message or user_turns > len(users):
        return 0
    before = len(users) - user_turns  # user rows above the request's first message
    if first_role == "user":
        return users[before] if before < len(users) else len(rows)
    return users[before - 1] + 1 if before > 0 else 0


def describe_call(name: str, arguments: str) -> tuple[str, str]:
    """The one-line title of a tool call and its arguments, pretty-printed."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return name, arguments
    if not isinstance(value, dict):
        return name, arguments
    parts = []
    for key, item in value.items():
        shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        shown = shown.replace("\n", " ")
        if len(shown) > 48:
            shown = shown[:47] + "…"
        parts.append(f"{key}={shown}")
    title = f"{name}  {'  '.join(parts)}" if parts else name
    return title, json.dumps(value, ensure_ascii=False, indent=2)


def notice_row(message: Message) -> Row:
    """A saved notice's row; a compaction's names the compaction (its Show / Restore)."""
    marker = str(message.meta_value("marker", "") or "")
    ref = str(message.meta_value("compaction", "") or "") if marker == MARKER_COMPACTION else ""
    return Row(
        "notice",
        message.content,
        level=str(message.meta_value("level", "info")),
        marker=marker,
        ref=ref,
        action=ACTION_CONTINUE if message.meta_value("notice_kind") in CONTINUED_KINDS else "",
    )


def thinking_row(message: Message) -> Row:
    """A saved answer's reasoning, folded, with the figures its message kept."""
    tokens = message.meta_value("reasoning_tokens", 0)
    seconds = message.meta_value("reasoning_s")
    tokens = tokens if isinstance(tokens, int) else 0
    seconds = float(seconds) if isinstance(seconds, (int, float)) else None
    estimated = message.meta_value("reasoning_estimated", True) is not False
    title = thought_label(tokens, seconds, estimated)
    return Row("thinking", message.reasoning, title=title, message_id=message.id)


def thought_label(tokens: int, seconds: float | None, estimated: bool = True) -> str:
    """A Thinking block's folded line: how long the model thought and in how many tokens
    (~: by Brim's count, not the engine's)."""
    about = "~" if estimated else ""
    figures = f"{about}{tokens:,} tokens" if tokens else ""
    if seconds is None:
        return f"Thought · {figures}" if figures else "Thought"
    return f"Thought for {seconds:.1f} s" + (f" · {figures}" if figures else "")


def notice_action(kind: str, details: Mapping[str, object] | None = None) -> str:
    """The action a live notice of this kind offers ("" for none)."""
    if kind == NOTICE_SPILL_CHOICE:
        fits = (details or {}).get("fits")
        return f"{ACTION_LOWER_PIN}:{fits}" if isinstance(fits, int) and fits > 0 else ""
    return ACTION_CONTINUE if kind in CONTINUED_KINDS else ""


def lowered_pin(action: str) -> int | None:
    """The window a lower_pin action offers (None: it is another action)."""
    verb, _, figure = action.partition(":")
    return int(figure) if verb == ACTION_LOWER_PIN and figure.isdigit() else None


def stale_actions(rows: Sequence[Row]) -> list[Row]:
    """The rows whose action no longer applies: a message was sent after them (Continue
    resumes only the answer cut last, and only before anything else was said)."""
    last_user = max((i for i, row in enumerate(rows) if row.kind == "user"), default=-1)
    return [row for row in rows[:last_user] if row.action]


def merge_live_rows(saved: list[Row], live: list[Row]) -> list[Row]:
    """The saved rows with the live rows the record does not hold (receipts, errors, notices
    not yet saved) put back where they were shown.

    A live row that followed the Nth user message goes at the end of that turn in the saved
    rows, so reopening the same conversation (an agent saved in the editor) keeps each
    receipt under its own answer; rows shown before any user message (start-up notices) go
    after the history."""
    keys = {(row.kind, row.text) for row in saved}
    tool_calls = {row.key for row in saved if row.kind == "tool" and row.key}
    # A turn whose receipt was saved shows that one; the live copy may read a minute apart.
    receipt_turns: set[int] = set()
    turn = 0
    for row in saved:
        if row.kind == "user":
            turn += 1
        elif row.kind == "receipt":
            receipt_turns.add(turn)
    by_turn: dict[int, list[Row]] = {}
    turn = 0
    for row in live:
        if row.kind == "user":
            turn += 1
        if (row.kind, row.text) in keys or (row.kind == "tool" and row.key in tool_calls):
            continue
        if row.kind == "receipt" and turn in receipt_turns:
            continue
        by_turn.setdefault(turn, []).append(row)
    merged: list[Row] = []
    turn = 0
    for row in saved:
        if row.kind == "user":
            if turn:
                merged.extend(by_turn.pop(turn, []))
            turn += 1
        merged.append(row)
    for _, rest in sorted(by_turn.items(), key=lambda item: item[0] or len(saved) + 1):
        merged.extend(rest)
    return merged


def receipt_row(receipt: Receipt) -> Row:
    """A saved receipt, reading exactly as the live one did under its answer."""
    text = format_receipt(
        receipt.elapsed_s,
        receipt.prompt_tokens,
        receipt.completion_tokens,
        receipt.tokens_per_s,
        finished_at=receipt.finished_at,
        cached_tokens=receipt.cached_tokens,
        cache_reported=receipt.cache_reported,
    )
    return Row("receipt", text)


def place_receipts(
    rows: Sequence[Row], times: Sequence[float], receipts: Sequence[Receipt]
) -> list[Row]:
    """Each receipt after the last row written before its turn finished: under the turn's
    answer (and the notices the turn wrote), before the next user message. `times[i]` is
    when the message behind `rows[i]` was written."""
    pending = sorted(receipts, key=lambda r: r.finished_at)
    out: list[Row] = []
    index = 0
    for row, at in zip(rows, times, strict=True):
        while index < len(pending) and pending[index].finished_at < at:
            out.append(receipt_row(pending[index]))
            index += 1
        out.append(row)
    out.extend(receipt_row(r) for r in pending[index:])
    return out


def rows_for(messages: list[Message], receipts: Sequence[Receipt] = ()) -> list[Row]:
    """The rows a saved conversation shows, its saved receipts under their answers. System
    prompts and the continuation nudge are not shown; a tool call and its result are one
    row."""
    rows: list[Row] = []
    times: list[float] = []
    calls: dict[str, Row] = {}
    written = 0.0  # when the message behind the rows added last was written
    for message in messages:
        times.extend([written] * (len(rows) - len(times)))
        written = message.created
        if message.is_notice:
            rows.append(notice_row(message))
        elif message.role == "user":
            if message.kind != "continuation":
                rows.append(Row("user", message.content, message_id=message.id))
        elif message.role == "assistant":
            if message.kind == "summary":
                rows.append(Row("summary", message.content, message_id=message.id))
                continue
            if message.reasoning.strip():  # folded above its answer
                rows.append(thinking_row(message))
            if message.content.strip():
                rows.append(Row("assistant", message.content, message_id=message.id))
            for call in message.tool_calls:
                title, detail = describe_call(call.name, call.arguments)
                row = Row("tool", "", title=title, detail=detail, key=call.id)
                row.message_id = row.message_id or message.id
                calls[call.id] = row
                rows.append(row)
        elif message.role == "tool":
            row = calls.get(message.tool_call_id or "")
            if row is not None:
                row.text = message.content[:2_000]
                row.status = f"{len(message.content):,} chars"
    restored = {
        str(m.meta_value("compaction", ""))
        for m in messages
        if m.is_notice and m.meta_value("notice_kind") == NOTICE_RESTORED
    }
    for row in rows:
        row.restored = bool(row.ref) and row.ref in restored
    if not receipts:
        return rows
    times.extend([written] * (len(rows) - len(times)))
    return place_receipts(rows, times, receipts)
