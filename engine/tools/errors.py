"""What can go wrong when the agent calls a tool.

None of these escape `ToolRegistry.call`: each becomes an error result the model can read
and act on (re-read the file, narrow the search, ask the user), because a tool failure is
part of the conversation, not a crash of the run.

    ToolError
     ├── ToolArgumentError      the model's arguments are missing, mistyped or not JSON
     ├── PathOutsideWorkspace   a path resolves (symlinks included) outside the workspace
     ├── ToolDenied             the user (or the headless default) refused the action
     ├── ResultNotStored        retrieve_tool_result names a result the store does not hold
     └── ToolUnavailable        the run lacks what the tool needs (no work state, no compaction)
"""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read as the tool's result."""


class ToolArgumentError(ToolError):
    """The arguments do not fit the tool's schema."""


class PathOutsideWorkspace(ToolError):
    """A path argument leads outside the workspace."""


class ToolDenied(ToolError):
    """The action needed approval and did not get it."""


class ResultNotStored(ToolError):
    """No stored result under that tool_call_id."""


class ToolUnavailable(ToolError):
    """This run cannot offer what the tool does."""
