"""What the model saw: a request as it went on the wire, cut into its parts and set beside
the request before it.

Pure functions over the recorded request (engine/context/replay.py's `Replay`): the parts
(system prompt, checkpoint, kept messages, the new message, tools, the template's framing)
each counted by the session's counter, and the changes from the request before, found by
each message's content (a message the same in both is the same message wherever it
stands) and its identity (one id, other content: the same message, changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from engine.context.replay import Replay
from engine.messages import Message

PartName = Literal["system", "checkpoint", "kept", "new", "tools", "framing"]
ChangeKind = Literal["added", "removed", "moved", "changed"]
PREVIEW_CHARS = 80


class RequestCounter(Protocol):
    def count_message(self, message: Message) -> int: ...
    def count_text(self, text: str) -> int: ...
    def count_tools(self, tools: list[dict[str, Any]]) -> int: ...
    def count_request(self, messages: list[Message], tools: list[dict[str, Any]]) -> int: ...


@dataclass(frozen=True)
class RequestPart:
    part: PartName
    tokens: int
    messages: int  # how many wire messages (tool schemas, for "tools") it holds

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "tokens": self.tokens, "messages": self.messages}


@dataclass(frozen=True)
class RequestChange:
    change: ChangeKind
    role: str  # a message's role, or "tools" for a tool schema
    id: str  # the message's id, or the tool's name
    preview: str
    position: int = -1  # where it stands in the last request (-1: not in it)
    was: int = -1  # where it stood in the request before (-1: not in it)
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "role": self.role,
            "id": self.id,
            "preview": self.preview,
            "position": self.position,
            "was": self.was,
            "tokens": self.tokens,
        }


def tool_name(schema: dict[str, Any]) -> str:
    function = schema.get("function", schema)
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def new_part_start(messages: Sequence[Message]) -> int:
    """Where the request's new message begins: after the last answer of the model (the
    user's message, or the tool results the model asked for)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return index + 1
    return next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))


def request_parts(
    sent: Replay, counter: RequestCounter, checkpoints: Sequence[str] = ()
) -> list[RequestPart]:
    """Each part's tokens. A checkpoint joined into the system message is counted apart
    from the prompt it follows (`checkpoints`: the texts of the conversation's checkpoints;
    only those the request carries count). `framing` is what the chat template adds around
    them: Brim's count of the whole request less the parts, so the parts add up to it
    (negative where the messages counted one by one carry more framing than the whole)."""
    messages = list(sent.messages)
    tools = list(sent.tools)
    system = [m for m in messages if m.role == "system"]
    system_tokens = sum(counter.count_message(m) for m in system)
    joined = "\n".join(m.content for m in system)
    inside = [text for text in checkpoints if text and text in joined]
    # The prompt is counted as itself (the system messages without the checkpoints they
    # carry), and the checkpoint as what it adds: the two add up to the system messages.
    prompt_tokens = sum(
        counter.count_message(replace(m, content=_without(m.content, inside)))
        for m in system
        if m.kind != "summary"
    )
    checkpoint_tokens = max(0, system_tokens - prompt_tokens)
    placed = [m for m in messages if m.role != "system" and m.kind == "summary"]
    checkpoint_tokens += sum(counter.count_message(m) for m in placed)
    start = new_part_start(messages)
    conversation = [
        (i, m) for i, m in enumerate(messages) if m.role != "system" and m.kind != "summary"
    ]
    kept = [m for i, m in conversation if i < start]
    new = [m for i, m in conversation if i >= start]
    parts = [
        RequestPart("system", min(prompt_tokens, system_tokens), len(system)),
        RequestPart("checkpoint", checkpoint_tokens, len(inside) + len(placed)),
        RequestPart("kept", sum(counter.count_message(m) for m in kept), len(kept)),
        RequestPart("new", sum(counter.count_message(m) for m in new), len(new)),
        RequestPart("tools", counter.count_tools(tools) if tools else 0, len(tools)),
    ]
    whole = counter.count_request(messages, tools)
    # What the template adds around the parts; below 0 where counting each message alone
    # frames it more than the whole request does (a join the template makes once).
    parts.append(RequestPart("framing", whole - sum(p.tokens for p in parts), 0))
    return parts


def _without(text: str, parts: Sequence[str]) -> str:
    for part in parts:
        text = text.replace(part, "")
    return text.rstrip()


def _preview(message: Message) -> str:
    text = " ".join(message.content.split())
    if not text and message.tool_calls:
        text = ", ".join(f"{c.name}(…)" for c in message.tool_calls)
    return text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")


def _kept_in_order(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The longest run of matched messages whose order both requests share (a longest
    increasing subsequence of the old positions, taken in the new order): the others moved."""
    tails: list[int] = []  # index into pairs of the smallest tail of each length
    parent: list[int] = [-1] * len(pairs)
    for index, (_, was) in enumerate(pairs):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if pairs[tails[middle]][1] < was:
                low = middle + 1
            else:
                high = middle
        parent[index] = tails[low - 1] if low else -1
        if low == len(tails):
            tails.append(index)
        else:
            tails[low] = index
    kept: set[tuple[int, int]] = set()
    at = tails[-1] if tails else -1
    while at != -1:
        kept.add(pairs[at])
        at = parent[at]
    return kept


def request_changes(
    before: Replay | None, after: Replay, count: RequestCounter | None = None
) -> list[RequestChange]:
    """What changed from `before` to `after`, in the order of `after` (removals last): each
    message matched by its content; unmatched ones with one id on both sides changed."""
    if before is None:
        return []
    tokens = count.count_message if count is not None else (lambda m: 0)
    old, new = list(before.messages), list(after.messages)
    pairs = _matched(old, new)
    matched_new = {position for position, _ in pairs}
    unmatched_new = [p for p in range(len(new)) if p not in matched_new]
    matched_old = {was for _, was in pairs}
    unmatched_old = {old[w].id: w for w in range(len(old)) if w not in matched_old}
    in_order = _kept_in_order(pairs)
    changes: list[tuple[int, RequestChange]] = []
    for position, was in pairs:
        if (position, was) not in in_order:
            m = new[position]
            change = RequestChange("moved", m.role, m.id, _preview(m), position, was, tokens(m))
            changes.append((position, change))
    for position in unmatched_new:
        m = new[position]
        was = unmatched_old.pop(m.id, -1)
        kind: ChangeKind = "changed" if was >= 0 else "added"
        changes.append(
            (position, RequestChange(kind, m.role, m.id, _preview(m), position, was, tokens(m)))
        )
    removed = [
        RequestChange("removed", old[w].role, old[w].id, _preview(old[w]), -1, w, tokens(old[w]))
        for w in sorted(unmatched_old.values())
    ]
    ordered = [change for _, change in sorted(changes, key=lambda item: item[0])]
    return [*ordered, *removed, *_tool_changes(before.tools, after.tools)]


def _matched(old: Sequence[Message], new: Sequence[Message]) -> list[tuple[int, int]]:
    """(new position, old position) of each message both requests carry: the same message
    (its id, its content) first, then the same content, the latest such old message (what a
    compaction keeps is the newest: with every answer "Noted.", the first "Noted." is the
    one it dropped), in the order of `new`."""
    by_id = {m.id: w for w, m in enumerate(old)}
    used: set[int] = set()
    pairs: dict[int, int] = {}
    for position, m in enumerate(new):
        w = by_id.get(m.id)
        if w is not None and old[w].content_hash == m.content_hash:
            pairs[position] = w
            used.add(w)
    waiting: dict[str, list[int]] = {}
    for w, m in enumerate(old):
        if w not in used:
            waiting.setdefault(m.content_hash, []).append(w)
    asking: dict[str, list[int]] = {}
    for position, m in enumerate(new):
        if position not in pairs:
            asking.setdefault(m.content_hash, []).append(position)
    for content, positions in asking.items():
        found = waiting.get(content, [])
        latest = found[-len(positions) :] if found else []  # the newest, in their order
        for position, w in zip(positions[-len(latest) :] if latest else [], latest, strict=True):
            pairs[position] = w
    return sorted(pairs.items())


def _tool_changes(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> list[RequestChange]:
    old = [tool_name(t) for t in before]
    new = [tool_name(t) for t in after]
    added = [RequestChange("added", "tools", n, n, new.index(n)) for n in new if n not in old]
    gone = [RequestChange("removed", "tools", n, n, -1, old.index(n)) for n in old if n not in new]
    return [*added, *gone]


def first_conversation_message(sent: Replay) -> Message | None:
    """The first message of the conversation itself the request carried (not the system
    prompt, not a checkpoint): where the transcript's cut line goes."""
    return next((m for m in sent.messages if m.role != "system" and m.kind != "summary"), None)


def user_turns_from(first: Message | None, history: Sequence[Message], sent: Replay) -> int:
    """How many of the user's messages (as a transcript shows them: continuations aside)
    stand from `first` on: counted in the history where `first` is found there, else in
    the request itself."""

    def shown(m: Message) -> bool:
        return m.role == "user" and not m.is_notice and m.kind not in ("continuation", "summary")

    if first is None:
        return 0
    ids = [m.id for m in history]
    if first.id in ids:
        return sum(1 for m in history[ids.index(first.id) :] if shown(m))
    return sum(1 for m in sent.messages if shown(m))
