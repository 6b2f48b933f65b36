"""The tools every Brim agent gets, in one registry."""

from __future__ import annotations

from engine.tools import command_tool, list_tool, read_tool, search_tool
from engine.tools.conversation_tools import RETRIEVE_TOOL_DEF, SUMMARIZE_TOOL, WORK_STATE_TOOL
from engine.tools.registry import Tool, ToolRegistry
from engine.tools.write_tools import EDIT_TOOL, WRITE_TOOL


def builtin_tools() -> tuple[Tool, ...]:
    return (
        read_tool.TOOL,
        list_tool.TOOL,
        search_tool.TOOL,
        WRITE_TOOL,
        EDIT_TOOL,
        command_tool.TOOL,
        WORK_STATE_TOOL,
        SUMMARIZE_TOOL,
        RETRIEVE_TOOL_DEF,
    )


def default_registry() -> ToolRegistry:
    """A fresh registry of the built-in tools (schemas sorted by name)."""
    return ToolRegistry(builtin_tools())


def conversation_registry() -> ToolRegistry:
    """The built-in tools that act on the conversation, not on files: an agent without a
    folder (but with MCP servers) keeps these."""
    return ToolRegistry((WORK_STATE_TOOL, SUMMARIZE_TOOL, RETRIEVE_TOOL_DEF))


APPROVAL_TOOLS = frozenset(t.name for t in builtin_tools() if t.needs_approval)
