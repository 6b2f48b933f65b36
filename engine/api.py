"""The engine as the desktop sees it: the one module `desktop/` imports from the engine.

A list of re-exports and nothing else (a house test fails when a module under desktop/
imports any other engine module). What the desktop needs from the engine is named here, so
the engine's rooms can move without the desktop noticing. Grouped by what they are for.
"""

# ruff: noqa: I001, RUF022  (grouped by purpose, not sorted by name)

from __future__ import annotations

# -- the session the desktop drives, and what opens one -------------------------------------
from engine.session.protocol import SessionControl
from engine.session import ChatSession
from engine.paths import BrimPaths

# -- events: what the engine says, one typed stream -----------------------------------------
from engine.events import (
    AcceptedEvent,
    NOTICE_ANSWER_CUT,
    NOTICE_THINKING_CUT,
    NOTICE_COMPACTED,
    NOTICE_REPETITION,
    NOTICE_RESTORED,
    NOTICE_RESTORE_UNCONFIRMED,
    NOTICE_SPILL_CHOICE,
    CompactionRestoredEvent,
    CompactionViewEvent,
    ContextEvent,
    ContextReportEvent,
    DeltaEvent,
    ReasoningEndEvent,
    ReasoningEvent,
    ErrorEvent,
    Event,
    EventSink,
    LastRequestEvent,
    LearnProgressEvent,
    LoadProgressEvent,
    MemorySuggestionsEvent,
    NoticeEvent,
    RequestViewEvent,
    StateEvent,
    StepEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageReportEvent,
    ViewRequestEvent,
    WindowEvent,
    WithdrawnEvent,
    WorkStateEvent,
)

# -- commands: the composer completes from them; the engine routes what is typed -----------
from engine.commands import (
    COMMANDS,
    COMPACTION_RESTORE,
    COMPACTION_SHOW,
    compaction_command,
    NOTICE_VIEW_FALLBACK,
    VIEW_AGENT_EDITOR,
    VIEW_NEW_AGENT,
    VIEW_MEMORY_BROWSER,
    VIEW_MEMORY_REVIEW,
    VIEW_NEW_CONVERSATION,
    VIEWS,
    SlashCommand,
    completions,
    parse_command,
)

# -- what a conversation shows: messages, saved receipts, the rail's and overlays' reports --
from engine.messages import Message
from engine.store.records import Receipt
from engine.report.context_report import ContextReport, TimelineMarker, UsageReport, format_tokens

# -- agents: their files, the settings schema, the window, the probe the editor runs -------
from engine.config import (
    AGENT_FIELDS,
    FIELDS_BY_NAME,
    FieldSpec,
    AgentConfig,
    AgentConfigError,
    AgentFileChanged,
    ConfigError,
    FieldProblem,
    load_agent,
    save_agent,
)
from engine.config.agent_admin import (
    TrashedAgent,
    create_agent,
    duplicate_agent,
    is_agent_file_change,
    restore_agent,
    trash_agent,
)
from engine.folder_watcher import FolderWatcher
from engine.window.resolution import WindowResolution
from engine.agent.texts import CONTINUE_TEXT
from engine.config.mcp_servers import McpEntryProblem, McpServer, parse_servers
from engine.mcp.probe import ServerTest, check_mcp_server
from engine.agent.probe import (
    ProbeComparison,
    ProbeFailure,
    check_agent_mcp_server,
    list_agent_models,
    probe_agent,
)
from engine.window.output_cap import default_output_cap
from engine.providers.base import DEFAULT_BASE_URLS, ModelInfo
from engine.providers.embedded import default_model_path
from engine.fit.agent_fit import AgentFit, fit_for_agent
from engine.fit.report import FitUnavailable

# -- the library: agents and conversations on disk, the window's settings -------------------
from engine.library import LAST_AGENT, LAST_CONVERSATION, WORKSPACE, Choice, Library, Listing
from engine.conversation_claim import open_elsewhere

# -- tools: asking the person before a command or a write -----------------------------------
from engine.tools import ApprovalRequest, Approver
from engine.tools import Decision as ApprovalDecision

# -- memory: the service the browser and the review dialog work through ---------------------
from engine.memory import (
    Explanation,
    MemoryEntry,
    MemoryService,
    MemoryWatcher,
    Scope,
    Suggestion,
    parse_entry,
)
from engine.memory import Decision as ReviewDecision
from engine.memory.errors import MemoryStoreError, ScopeUnreadable
from engine.memory.layout import INTENT_NAME, QUEUE_NAME
from engine.memory.plaintext import visible
from engine.memory.review import REVIEW_PAGE_SIZE, ReviewResult
from engine.memory.watcher import DEFAULT_DEBOUNCE_S

__all__ = [
    # the session
    "SessionControl",
    "AgentFit",
    "FitUnavailable",
    "fit_for_agent",
    "ChatSession",
    "BrimPaths",
    # events
    "CONTINUE_TEXT",
    "NOTICE_ANSWER_CUT",
    "NOTICE_THINKING_CUT",
    "NOTICE_COMPACTED",
    "NOTICE_REPETITION",
    "NOTICE_RESTORED",
    "NOTICE_RESTORE_UNCONFIRMED",
    "NOTICE_SPILL_CHOICE",
    "CompactionRestoredEvent",
    "CompactionViewEvent",
    "AcceptedEvent",
    "ContextEvent",
    "ContextReportEvent",
    "DeltaEvent",
    "ReasoningEndEvent",
    "ReasoningEvent",
    "ErrorEvent",
    "Event",
    "EventSink",
    "LastRequestEvent",
    "LearnProgressEvent",
    "LoadProgressEvent",
    "MemorySuggestionsEvent",
    "NoticeEvent",
    "RequestViewEvent",
    "StateEvent",
    "StepEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnEndEvent",
    "UsageReportEvent",
    "ViewRequestEvent",
    "WindowEvent",
    "WithdrawnEvent",
    "WorkStateEvent",
    # commands
    "COMMANDS",
    "COMPACTION_RESTORE",
    "COMPACTION_SHOW",
    "compaction_command",
    "NOTICE_VIEW_FALLBACK",
    "VIEW_AGENT_EDITOR",
    "VIEW_NEW_AGENT",
    "VIEW_MEMORY_BROWSER",
    "VIEW_MEMORY_REVIEW",
    "VIEW_NEW_CONVERSATION",
    "VIEWS",
    "SlashCommand",
    "completions",
    "parse_command",
    # what a conversation shows
    "Message",
    "Receipt",
    "ContextReport",
    "TimelineMarker",
    "UsageReport",
    "format_tokens",
    # agents
    "AGENT_FIELDS",
    "FIELDS_BY_NAME",
    "FieldSpec",
    "TrashedAgent",
    "create_agent",
    "duplicate_agent",
    "is_agent_file_change",
    "restore_agent",
    "trash_agent",
    "FolderWatcher",
    "AgentConfig",
    "AgentConfigError",
    "AgentFileChanged",
    "ConfigError",
    "FieldProblem",
    "load_agent",
    "save_agent",
    "WindowResolution",
    # MCP servers (the agent editor's section)
    "McpEntryProblem",
    "McpServer",
    "ServerTest",
    "parse_servers",
    "check_agent_mcp_server",
    "check_mcp_server",
    "ProbeComparison",
    "ProbeFailure",
    "list_agent_models",
    "probe_agent",
    "default_output_cap",
    "DEFAULT_BASE_URLS",
    "ModelInfo",
    "default_model_path",
    # the library
    "LAST_AGENT",
    "LAST_CONVERSATION",
    "WORKSPACE",
    "Choice",
    "Library",
    "Listing",
    "open_elsewhere",
    # tools
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    # memory
    "Explanation",
    "MemoryEntry",
    "MemoryService",
    "MemoryWatcher",
    "ReviewDecision",
    "Scope",
    "Suggestion",
    "parse_entry",
    "MemoryStoreError",
    "ScopeUnreadable",
    "INTENT_NAME",
    "QUEUE_NAME",
    "visible",
    "REVIEW_PAGE_SIZE",
    "ReviewResult",
    "DEFAULT_DEBOUNCE_S",
]
