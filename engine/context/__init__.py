"""The context ladder: clear, warn, compact, trim, recover. Never overflow, never lose the task.

The agent loop talks to `ContextManager`; the rungs underneath are plain functions over
immutable `Message` lists, each usable (and tested) alone. Token counting is injected
(`count_message`, optionally a whole-request `count`), and so is the summarizer.
"""

from engine.context.budget import ContextBudget, ContextUsage, recent_tail_tokens
from engine.context.checkpoint import covered_keys, merge_covered, normalize_checkpoint
from engine.context.clearing import ClearResult, clear_tool_results
from engine.context.compaction import (
    CompactionPlan,
    CompactionResult,
    SummaryRequest,
    SummaryResult,
    compact,
    plan_compaction,
)
from engine.context.errors import ContextError, WorkStateError
from engine.context.history import group_units, tool_pairing_problems
from engine.context.manager import ContextManager, LadderOutcome, PreparedRequest
from engine.context.nudges import IterationPressure, pressure_message
from engine.context.progress import extract_run_progress
from engine.context.trimming import TrimResult, trim_messages
from engine.context.work_state import Journal, WorkState, journal_preamble, render_work_state

__all__ = [
    "ClearResult",
    "CompactionPlan",
    "CompactionResult",
    "ContextBudget",
    "ContextError",
    "ContextManager",
    "ContextUsage",
    "IterationPressure",
    "Journal",
    "LadderOutcome",
    "PreparedRequest",
    "SummaryRequest",
    "SummaryResult",
    "TrimResult",
    "WorkState",
    "WorkStateError",
    "clear_tool_results",
    "compact",
    "covered_keys",
    "extract_run_progress",
    "group_units",
    "journal_preamble",
    "merge_covered",
    "normalize_checkpoint",
    "plan_compaction",
    "pressure_message",
    "recent_tail_tokens",
    "render_work_state",
    "tool_pairing_problems",
    "trim_messages",
]
