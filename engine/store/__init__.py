"""SQLite persistence: conversations, messages, usage and receipts."""

from engine.store.errors import (
    DuplicateMessage,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
    UnknownConversation,
)
from engine.store.opening import move_aside
from engine.store.records import (
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
    "ConversationInfo",
    "DuplicateMessage",
    "MessageRecord",
    "Receipt",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "StoreTooNew",
    "UnknownConversation",
    "UsageRecord",
    "UsageSummary",
    "move_aside",
]
