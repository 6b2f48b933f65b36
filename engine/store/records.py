"""The plain values the store hands out (rows are never exposed as tuples)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.messages import Message


@dataclass(frozen=True)
class ConversationInfo:
    id: str
    title: str
    agent: str
    workspace: str | None
    created: float
    updated: float
    message_count: int  # live messages: what resuming the conversation loads
    deleted: float | None = None  # when it was soft-deleted; None while live


@dataclass(frozen=True)
class MessageRecord:
    """One stored row: the message, where it sits, and whether a rewrite replaced it."""

    seq: int
    message: Message
    archived_at: float | None  # None: part of the live history

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


@dataclass(frozen=True)
class CompactionRecord:
    """One compaction of a conversation: the checkpoint it wrote (its message id is the
    compaction's id), how many live messages it replaced, and whether they were restored."""

    number: int  # 1-based, in the order the conversation's compactions happened
    id: str
    replaced: int
    created: float
    restored: float | None = None  # when the user put the replaced messages back

    @property
    def is_restored(self) -> bool:
        return self.restored is not None


@dataclass(frozen=True)
class UsageSummary:
    """Totals for one provider and model (the `/usage` table)."""

    provider: str
    model: str
    requests: int
    prompt_tokens: int
    cached_tokens: int | None  # None: no request of this model reported cached tokens
    completion_tokens: int


@dataclass(frozen=True)
class UsageRecord:
    """One request's usage as stored (None: the engine did not report that figure)."""

    purpose: str  # chat | summary | ...
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    created: float


@dataclass(frozen=True)
class Receipt:
    """What one turn cost: the figures behind the turn_end event."""

    conversation_id: str | None
    elapsed_s: float
    prompt_tokens: int
    completion_tokens: int
    tokens_per_s: float
    finished_at: float
    # The prompt cache on the turn's last request: None for both on a receipt kept before
    # Brim recorded it; `cache_reported` False when the engine did not say.
    cached_tokens: int | None = None
    cache_reported: bool | None = None
