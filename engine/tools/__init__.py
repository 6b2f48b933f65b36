"""The tools the agent may call, and the rules every call goes through.

The agent loop needs four things from here: `default_registry().schemas()` for the request,
`ToolRegistry.call(name, arguments, ctx, call_id=...)` for each tool call (it never raises
for a tool's failure), a `ToolContext` per conversation (workspace, result store folder,
work state, approver, compaction hook, result budget, metrics), and an approver
(`DenyAll` for headless by default, `AutoApprove` for `--approve auto`, wrapped in a
`ConversationApprover` to remember "always for this conversation").
"""

from engine.tools.approval import (
    ApprovalRequest,
    Approver,
    AutoApprove,
    ConversationApprover,
    Decision,
    DenyAll,
)
from engine.tools.builtin import APPROVAL_TOOLS, builtin_tools, default_registry
from engine.tools.context import CompactHook, ToolContext
from engine.tools.errors import (
    PathOutsideWorkspace,
    ResultNotStored,
    ToolArgumentError,
    ToolDenied,
    ToolError,
    ToolUnavailable,
)
from engine.tools.registry import Tool, ToolOutcome, ToolRegistry, parse_arguments
from engine.tools.result_store import StoredPage, ToolResultStore
from engine.tools.shaping import DEFAULT_RESULT_BUDGET_CHARS, ToolMetrics, clean_text, shape_result
from engine.tools.workspace import resolve_inside

__all__ = [
    "APPROVAL_TOOLS",
    "DEFAULT_RESULT_BUDGET_CHARS",
    "ApprovalRequest",
    "Approver",
    "AutoApprove",
    "CompactHook",
    "ConversationApprover",
    "Decision",
    "DenyAll",
    "PathOutsideWorkspace",
    "ResultNotStored",
    "StoredPage",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolDenied",
    "ToolError",
    "ToolMetrics",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResultStore",
    "ToolUnavailable",
    "builtin_tools",
    "clean_text",
    "default_registry",
    "parse_arguments",
    "resolve_inside",
    "shape_result",
]
