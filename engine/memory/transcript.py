"""What the memory extractor is shown of a conversation: the context block and the scanned
slice, each sized in tokens.

The context block (the prior summary, the later messages, the already-reflected earlier
ones) carries no source IDs, so nothing in it can be quoted. The scanned slice carries a
source ID on each authenticated user message; tool results and the assistant's text are
shortened first when it does not fit, and split, in order, into as few transcripts as fit
the room one request leaves (engine/memory/sizing.py). The user's messages are never cut
(they are what may be quoted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.memory.sources import SourceSet
from engine.messages import Message

CountText = Callable[[str], int]
MAX_PARTS = 3  # extractor conversations per scanned slice, when it does not fit one
CONTEXT_MESSAGE_CHARS = 600
# Caps (chars) for tool results and assistant text in the scanned slice, tightened until
# the slice fits.
SLICE_CAPS: tuple[tuple[int, int | None], ...] = ((600, None), (250, 1_500), (80, 400))


@dataclass(frozen=True)
class ScanInput:
    conversation_id: str
    chunk: Sequence[Message]  # the scanned slice: only its user messages are sources
    summary: str = ""  # the prior checkpoint(s)
    later: Sequence[Message] = ()  # the recent tail kept verbatim (compaction)
    earlier: Sequence[Message] = ()  # the already-reflected messages (conversation end)


def cap(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f" […{len(text) - limit} more chars]"


def render_context_message(message: Message) -> str | None:
    if message.is_notice or message.kind in ("summary", "continuation"):
        return None
    if message.role == "tool":
        return f"[tool result: {message.name or 'tool'}] {cap(message.content, 120)}"
    if message.role not in ("user", "assistant"):
        return None
    text = cap(message.content.strip(), CONTEXT_MESSAGE_CHARS)
    if message.tool_calls:
        text += " " + " ".join(f"[called {c.name}]" for c in message.tool_calls)
    return f"[{message.role}] {text.strip()}"


_EARLIER_HEAD = "Earlier in the conversation (already reflected):"
_SUMMARY_HEAD = "Summary of the conversation so far:"
_LATER_HEAD = "Later in the conversation (after the part to scan):"


def _newest_that_fit(
    messages: Sequence[Message], count_text: CountText, budget: int, used: int
) -> tuple[list[str], int]:
    """The newest messages' context lines that still fit `budget` after `used`, in order."""
    lines: list[str] = []
    for message in reversed(list(messages)):
        line = render_context_message(message)
        if line is None:
            continue
        cost = count_text(line)
        if used + cost > budget:
            break
        lines.insert(0, line)
        used += cost
    return lines, used


def build_context_block(inp: ScanInput, count_text: CountText, budget: int) -> str:
    """The context block, at most `budget` tokens: the summary first, then the newest later
    messages, then the newest earlier ones; shown in conversation order."""
    budget -= sum(count_text(h) for h in (_EARLIER_HEAD, _SUMMARY_HEAD, _LATER_HEAD))
    if budget <= 0:
        return ""
    used = 0
    summary = inp.summary.strip()
    if summary:
        cost = count_text(summary)
        while summary and cost > budget:
            keep = min(len(summary) - 1, int(len(summary) * budget / max(cost, 1) * 0.95))
            summary = summary[: max(0, keep)].rstrip()
            cost = count_text(summary) if summary else 0
        used += cost
    later, used = _newest_that_fit(inp.later, count_text, budget, used)
    earlier, used = _newest_that_fit(inp.earlier, count_text, budget, used)
    parts: list[str] = []
    if earlier:
        parts.append(_EARLIER_HEAD + "\n" + "\n".join(earlier))
    if summary:
        parts.append(_SUMMARY_HEAD + "\n" + summary)
    if later:
        parts.append(_LATER_HEAD + "\n" + "\n".join(later))
    return "\n\n".join(parts)


def render_slice_message(
    message: Message, sources: SourceSet, tool_cap: int, text_cap: int | None
) -> str | None:
    if message.is_notice or message.kind in ("summary", "continuation"):
        return None
    if message.role == "tool":
        return (
            f"[tool result: {message.name or 'tool'} — tool output, not the user's words]\n"
            f"{cap(message.content, tool_cap)}"
        )
    if message.role == "user":
        tag = sources.tag_for(message)
        if tag is not None:
            return f"[user message · source {tag}]\n{message.content}"
        body = cap(message.content, tool_cap)
        return f"[user-role text, not a user message; cannot be quoted]\n{body}"
    if message.role == "assistant":
        text = cap(message.content, text_cap)
        calls = "".join(f"\n[assistant called {c.name}]" for c in message.tool_calls)
        return f"[assistant]\n{text}{calls}".rstrip()
    return None


def render_slices(
    chunk: Sequence[Message], sources: SourceSet, count_text: CountText, budget: int
) -> tuple[list[str], int]:
    """The scanned messages with source IDs, as transcripts of at most `budget` tokens each.
    Tool results and assistant text are shortened first; when the messages still do not
    fit one request they are split, in order, into several. Only parts holding a user
    source are kept (nothing else can be quoted); at most `MAX_PARTS`, the oldest first
    (what compaction removes is gone for good). Returns the parts and how many messages
    were left out."""
    pieces: list[tuple[str, bool]] = []
    for tool_cap, text_cap in SLICE_CAPS:
        pieces = [
            (p, m.role == "user" and sources.tag_for(m) is not None)
            for m in chunk
            if (p := render_slice_message(m, sources, tool_cap, text_cap)) is not None
        ]
        if sum(count_text(p) for p, _ in pieces) <= budget:
            break
    parts: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    used = 0
    for piece in pieces:
        cost = count_text(piece[0])
        if current and used + cost > budget:
            parts.append(current)
            current, used = [], 0
        current.append(piece)
        used += cost
    if current:
        parts.append(current)
    useful = [p for p in parts if any(has_source for _, has_source in p)]
    kept = useful[:MAX_PARTS]
    dropped = len(pieces) - sum(len(p) for p in kept)
    return ["\n\n".join(text for text, _ in p) for p in kept], dropped
