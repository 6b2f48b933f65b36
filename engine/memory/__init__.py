"""Memory: durable facts the user stated, suggested at compaction and at conversation end,
reviewed by the user, never invented.

The session holds a `SessionMemory` (the gate, the standing line, the run's snapshot and
receipts, the tools, the extraction hook, learn and reflection on close); the CLI and the
desktop hold a `MemoryService` for one memory root (list, accept, reject, forget, explain);
`MemoryWatcher` tells the desktop when memory files change on disk.
"""

from engine.memory.curation import LEARNER_ID
from engine.memory.entries import EntryFields, MemoryEntry, parse_entry, render_entry
from engine.memory.errors import (
    BadSubject,
    ClaimUnavailable,
    EntryConflict,
    MemoryRefused,
    MemoryStoreError,
    QuoteRejected,
    RevokedQuote,
    ScopeUnreadable,
    SensitiveContent,
    UnknownEntry,
    UnknownSuggestion,
)
from engine.memory.extractor import EXTRACTOR_ID, ScanReport, run_scan
from engine.memory.layout import MemoryLayout, Scope
from engine.memory.observe import MemoryObserver, standing_block, standing_for, standing_line
from engine.memory.queue import Decision, Suggestion, SuggestionQueue
from engine.memory.reflect import PassReport, Watermarks, learn_conversation, reflect_conversation
from engine.memory.requests import Complete, Completion, provider_complete
from engine.memory.runtime import SessionMemory
from engine.memory.service import Explanation, MemoryService
from engine.memory.sources import SourceSet
from engine.memory.store import MemoryStore, Snapshot
from engine.memory.tools import MEMORY_TOOL_NAMES, MemoryToolState, memory_tools
from engine.memory.transcript import ScanInput
from engine.memory.watcher import MemoryWatcher

__all__ = [
    "EXTRACTOR_ID",
    "LEARNER_ID",
    "MEMORY_TOOL_NAMES",
    "BadSubject",
    "ClaimUnavailable",
    "Complete",
    "Completion",
    "Decision",
    "EntryConflict",
    "EntryFields",
    "Explanation",
    "MemoryEntry",
    "MemoryLayout",
    "MemoryObserver",
    "MemoryRefused",
    "MemoryService",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryToolState",
    "MemoryWatcher",
    "PassReport",
    "QuoteRejected",
    "RevokedQuote",
    "ScanInput",
    "ScanReport",
    "Scope",
    "ScopeUnreadable",
    "SensitiveContent",
    "SessionMemory",
    "Snapshot",
    "SourceSet",
    "Suggestion",
    "SuggestionQueue",
    "UnknownEntry",
    "UnknownSuggestion",
    "Watermarks",
    "learn_conversation",
    "memory_tools",
    "parse_entry",
    "provider_complete",
    "reflect_conversation",
    "render_entry",
    "run_scan",
    "standing_block",
    "standing_for",
    "standing_line",
]
