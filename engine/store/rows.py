"""How a message and a conversation are laid out in their rows, and read back: text with
a broken stream's lone surrogates repaired on the way in and out."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from engine.messages import Message, ToolCall
from engine.store.errors import StoreError
from engine.store.records import ConversationInfo
from engine.store.text import decoded_column, repair_surrogates

TITLE_CHARS = 60
MESSAGE_COLUMNS = (
    "seq, id, role, kind, content, tool_calls, tool_call_id, name, meta, created, archived_at,"
    " reasoning"
)
INFO_SQL = (
    "SELECT c.id, c.title, c.agent, c.workspace, c.created, c.updated, c.deleted,"
    " (SELECT COUNT(*) FROM messages m"
    "   WHERE m.conversation_id = c.id AND m.archived_at IS NULL) AS message_count"
    " FROM conversations c"
)


def text_in(value: str | None) -> str | None:
    """Text for a TEXT column, with any lone surrogates of a broken stream repaired."""
    return None if value is None else repair_surrogates(value)


def text_out(value: str | bytes | None) -> str | None:
    return decoded_column(value)


def message_row(message: Message) -> tuple[Any, ...]:
    """The columns after (conversation_id, seq) of a message's row."""
    calls = (
        json.dumps([[c.id, c.name, c.arguments] for c in message.tool_calls])
        if message.tool_calls
        else None
    )
    try:
        meta = json.dumps([[k, v] for k, v in message.meta]) if message.meta else None
    except (TypeError, ValueError) as exc:
        raise StoreError(f"message {message.id}: meta values must be JSON values ({exc})") from None
    return (
        message.id,
        message.role,
        message.kind,
        text_in(message.content),
        calls,
        text_in(message.tool_call_id),
        text_in(message.name),
        meta,
        float(message.created),
    )


def _clean_arguments(arguments: Any) -> Any:
    # JSON keeps a lone surrogate as an escape that loads back unencodable.
    return repair_surrogates(arguments) if isinstance(arguments, str) else arguments


def message_from(row: sqlite3.Row) -> Message:
    calls = tuple(
        ToolCall(repair_surrogates(i), repair_surrogates(n), _clean_arguments(a))
        for i, n, a in json.loads(row["tool_calls"] or "[]")
    )
    meta = tuple((k, v) for k, v in json.loads(row["meta"] or "[]"))
    return Message(
        role=row["role"],
        content=text_out(row["content"]) or "",
        tool_calls=calls,
        tool_call_id=text_out(row["tool_call_id"]),
        name=text_out(row["name"]),
        kind=row["kind"],
        id=row["id"],
        created=row["created"],
        meta=meta,
        reasoning=text_out(row["reasoning"]) or "",
    )


def title_from(message: Message) -> str:
    """A conversation's title from its first user message: the first line, shortened."""
    first = next((ln.strip() for ln in message.content.splitlines() if ln.strip()), "")
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


def conversation_info(row: sqlite3.Row) -> ConversationInfo:
    """A row of `INFO_SQL` as a `ConversationInfo`."""
    return ConversationInfo(
        id=row["id"],
        title=text_out(row["title"]) or "",
        agent=text_out(row["agent"]) or "",
        workspace=text_out(row["workspace"]),
        created=row["created"],
        updated=row["updated"],
        message_count=row["message_count"],
        deleted=row["deleted"],
    )
