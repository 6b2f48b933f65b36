"""The tools that act on the conversation rather than the workspace.

- update_work_state: the agent's own record of where the work stands (state.json), patched
  field by field so a small correction cannot drop the rest. It outlives compaction.
- summarize_context: the agent asks for compaction itself, through the same path as
  `/compact` (the loop's hook), when it knows it is about to go deep.
- retrieve_tool_result: a stored result (cut at insertion, or cleared later) read back a
  page at a time. A missing one says to re-run the original tool: the conversation never
  depends on a writable disk.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.context.constants import RETRIEVE_TOOL
from engine.context.errors import WorkStateError
from engine.context.work_state import TODO_STATUSES, render_work_state
from engine.tools.context import ToolContext
from engine.tools.errors import ResultNotStored, ToolArgumentError, ToolError, ToolUnavailable
from engine.tools.registry import Tool
from engine.tools.shaping import LINE_BREAK_SLACK

WORK_STATE_NAME = "update_work_state"
SUMMARIZE_NAME = "summarize_context"
RETRIEVE_NAME = RETRIEVE_TOOL
# Room a retrieved page leaves in the result budget for its frame.
PAGE_FRAME_CHARS = 400
MIN_PAGE_CHARS = 500

WORK_STATE_DESCRIPTION = (
    "Record where the work stands in the conversation's work state (state.json), which "
    "survives context compaction. `patch` is merged field by field: a field set to an "
    "object is merged into the existing object, a field set to null is removed, any other "
    "value replaces the old one; fields not named are kept. `todos` is a list patched by "
    "`id`: an item with a known id updates only the fields it names, an item with a new "
    'id (or none) is added, and {"id": ..., "delete": true} removes one. Each todo has '
    f"`content`, `status` ({', '.join(TODO_STATUSES)}) and `verifiedBy`: when you mark a "
    "todo completed, set verifiedBy to how it was checked (the test run, the command, the "
    "file read); leave it empty only if nobody checked. Returns the whole state."
)
WORK_STATE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "patch": {
            "type": "object",
            "description": 'Fields to change, e.g. {"goal": "…", "todos": [{"id": "1", '
            '"content": "…", "status": "completed", "verifiedBy": "pytest -q"}]}.',
        },
    },
    "required": ["patch"],
}

SUMMARIZE_DESCRIPTION = (
    "Compact the conversation now: older messages are summarized into a checkpoint (goal, "
    "progress, files covered, next steps) and the most recent ones are kept verbatim. Call "
    "it before a long stretch of work when the context is filling up; it is the same as the "
    "user's /compact."
)
SUMMARIZE_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "required": []}

RETRIEVE_DESCRIPTION = (
    "Read a tool result that was cut or cleared from the conversation to save context, a "
    "page at a time. Give the tool_call_id named in the cut or cleared result and the "
    "character offset to start from (default 0); the result says the total length and "
    "the offset of the next page."
)
RETRIEVE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_call_id": {"type": "string", "description": "The id of the original tool call."},
        "offset": {"type": "integer", "description": "Character offset to start at (default 0)."},
    },
    "required": ["tool_call_id"],
}


async def update_work_state(args: dict[str, Any], ctx: ToolContext) -> str:
    if ctx.work_state is None:
        raise ToolUnavailable("work state is not available in this run; nothing was recorded")
    patch = args["patch"]
    try:
        state = await asyncio.to_thread(ctx.work_state.update, patch)
    except WorkStateError as exc:
        raise ToolArgumentError(f"the patch was not applied: {exc}") from exc
    except OSError as exc:
        raise ToolError(f"the work state could not be saved ({exc.strerror or exc})") from exc
    rendered = render_work_state(state)
    return "Work state saved.\n" + (rendered or "(the work state is now empty)")


def _wrap_patch(args: dict[str, Any]) -> dict[str, Any]:
    """Small models often send the fields themselves instead of {"patch": {...}}."""
    if "patch" in args or not args:
        return args
    return {"patch": args}


async def summarize_context(args: dict[str, Any], ctx: ToolContext) -> str:
    if ctx.compact is None:
        raise ToolUnavailable("compaction is not available in this run; the context is unchanged")
    try:
        outcome = await ctx.compact()
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(f"compaction failed ({exc}); the context is unchanged") from exc
    # The hook says what happened (compacted N → M, or why not): passed on as it is, never
    # dressed up as a success.
    return (outcome or "").strip() or "The compaction reported nothing; the context is unchanged."


def _page_end(text: str, start: int, room: int) -> int:
    end = min(len(text), start + room)
    if end < len(text):
        newline = text.rfind("\n", start, end)
        if newline >= 0 and newline + 1 - start >= room * (1 - LINE_BREAK_SLACK):
            end = newline + 1
    return end


async def retrieve_tool_result(args: dict[str, Any], ctx: ToolContext) -> str:
    call_id = args["tool_call_id"]
    offset = args.get("offset", 0)
    if offset < 0:
        raise ToolArgumentError("offset must be 0 or more")
    missing = (
        f"No stored result for tool_call_id {call_id!r}: it was never stored, or could not "
        "be saved. Re-run the original tool call to get the result again."
    )
    store = ctx.result_store
    if store is None:
        raise ResultNotStored(missing)
    try:
        whole = await asyncio.to_thread(store.read, call_id)
    except ResultNotStored as exc:
        raise ResultNotStored(missing) from exc
    total = whole.total
    if offset >= total and total > 0:
        raise ToolArgumentError(
            f"offset {offset:,} is past the end of the stored result ({total:,} characters)"
        )
    room = max(ctx.result_budget_chars - PAGE_FRAME_CHARS, MIN_PAGE_CHARS)
    end = _page_end(whole.text, offset, room)
    page = whole.text[offset:end]
    head = f"[Stored result {call_id}: characters {offset:,}-{end:,} of {total:,}.]"
    if end < total:
        foot = (
            f'[More follows: call {RETRIEVE_NAME} with tool_call_id "{call_id}" and offset {end}.]'
        )
    else:
        foot = "[End of the stored result.]"
    body = page if page.endswith("\n") or not page else page + "\n"
    return f"{head}\n{body}{foot}"


WORK_STATE_TOOL = Tool(
    name=WORK_STATE_NAME,
    description=WORK_STATE_DESCRIPTION,
    parameters=WORK_STATE_PARAMETERS,
    handler=update_work_state,
    prepare=_wrap_patch,
)
SUMMARIZE_TOOL = Tool(
    name=SUMMARIZE_NAME,
    description=SUMMARIZE_DESCRIPTION,
    parameters=SUMMARIZE_PARAMETERS,
    handler=summarize_context,
)
RETRIEVE_TOOL_DEF = Tool(
    name=RETRIEVE_NAME,
    description=RETRIEVE_DESCRIPTION,
    parameters=RETRIEVE_PARAMETERS,
    handler=retrieve_tool_result,
    aliases={"id": "tool_call_id", "call_id": "tool_call_id", "start": "offset"},
)
