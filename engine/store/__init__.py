"""SQLite persistence: conversations, messages, usage and receipts."""

from engine.store.errors import (
    DuplicateMessage,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreTooNew,
    UnknownCompaction,
    UnknownConversation,
)
from engine.store.opening import move_aside
from engine.store.records import (
    CompactionRecord,
    ConversationInfo,
    MessageRecord,
    Receipt,
    UsageRecord,
    UsageSummary,
)
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION
from engine.store.store import Store

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CompactionRecord",
    "ConversationInfo",
    "DuplicateMessage",
    "MessageRecord",
    "Receipt",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreLocked",
    "StoreTooNew",
    "UnknownCompaction",
    "UnknownConversation",
    "UsageRecord",
    "UsageSummary",
    "move_aside",
]
