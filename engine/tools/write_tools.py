"""write_file and edit_file: the two ways the agent changes a file, both behind approval.

The person approves the real change: the whole new file, or a unified diff against what is
on disk now. Everything that can be checked is checked before asking (the path stays inside
the workspace, the edit's text is found exactly once, the file is UTF-8), so nobody is asked
to approve something that would then fail. After the answer the file is read again, and a
file that changed while the dialog was open is not overwritten: the approval was for the
old content. Writes are atomic, and replace the final path component rather than write
through it, so a symlink swapped in at the last moment is replaced, never followed out.
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.tools import anchored
from engine.tools.approval import ApprovalRequest
from engine.tools.context import ToolContext
from engine.tools.errors import ToolArgumentError, ToolError
from engine.tools.registry import Tool
from engine.tools.textfiles import human_size, looks_binary, regular_file_size
from engine.tools.workspace import display_path, resolve_inside

WRITE_NAME = "write_file"
EDIT_NAME = "edit_file"
ALWAYS_KEY = "files:write"
ALWAYS_LABEL = "Allow every file write and edit in this workspace for this conversation"
MAX_EDIT_BYTES = 8 * 1024 * 1024
# An existing file larger than this is not diffed for the approval (the diff would be
# unreadable anyway); the request shows the new content whole instead.
MAX_DIFF_BYTES = 2 * 1024 * 1024
SNIPPET_CONTEXT_LINES = 3
MAX_SNIPPET_LINES = 30

WRITE_DESCRIPTION = (
    "Create a file in the workspace, or replace one entirely, with `content`. Parent "
    "folders are created. Needs the user's approval, which shows the whole new file or a "
    "diff against the current one. To change part of an existing file, prefer edit_file."
)
EDIT_DESCRIPTION = (
    "Replace one exact piece of text in a workspace file: `old` must occur exactly once "
    "(copy it from read_file output without the line numbers, including indentation and "
    "whitespace; add surrounding lines to make it unique), and is replaced by `new`. "
    "Needs the user's approval, which shows the unified diff."
)
PATH_PROPERTY = {
    "type": "string",
    "description": "File path, relative to the workspace (or absolute inside it).",
}
WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": PATH_PROPERTY,
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
}
EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": PATH_PROPERTY,
        "old": {"type": "string", "description": "The exact text to replace (unique in the file)."},
        "new": {"type": "string", "description": "The text to put in its place."},
    },
    "required": ["path", "old", "new"],
}


@dataclass(frozen=True)
class _Snapshot:
    """What is on disk before a change: None when the file does not exist yet."""

    data: bytes | None


def _snapshot(workspace: Path, real: Path, shown: str) -> _Snapshot:
    """The file as it is now, read through the workspace's descriptor (a link swapped in
    for the file or a parent is refused, so no outside file reaches the approval)."""
    if not anchored.exists(workspace, real):
        return _Snapshot(None)
    try:
        return _Snapshot(anchored.read_bytes(workspace, real, shown))
    except OSError as exc:
        raise ToolError(f"{shown}: cannot be read ({exc.strerror or exc})") from exc


def unified_diff(shown: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out).rstrip("\n")


def _line_count(text: str) -> int:
    return len(text.splitlines())


def _write_plan(workspace: Path, path: str, content: str) -> tuple[Path, str, _Snapshot, str]:
    real = resolve_inside(workspace, path)
    shown = display_path(workspace, real)
    if real.is_dir():
        raise ToolError(f"{shown} is a folder; give a file path")
    before = _snapshot(workspace, real, shown)
    size = len(content.encode("utf-8"))
    facts = f"{human_size(size)}, {_line_count(content):,} lines"
    if before.data is None:
        detail = f"Create {shown} ({facts}):\n\n{content}"
    elif before.data == content.encode("utf-8"):
        detail = ""
    elif len(before.data) > MAX_DIFF_BYTES or looks_binary(before.data[:8192]):
        detail = (
            f"Replace {shown} (now {human_size(len(before.data))}) with ({facts}):\n\n{content}"
        )
    else:
        old = before.data.decode("utf-8", errors="replace")
        detail = f"Replace {shown} ({facts}):\n\n{unified_diff(shown, old, content)}"
    return real, shown, before, detail


def _commit(
    workspace: Path, path: str, real: Path, shown: str, before: _Snapshot, data: bytes
) -> None:
    """Write `data` if the file is still as it was when the change was approved."""
    now = _snapshot(workspace, real, shown)
    if now != before:
        raise ToolError(
            f"{shown} changed while waiting for approval; nothing was written. Read it again "
            "and redo the change."
        )
    # Re-resolve: the approval wait is long enough for the tree to change under us.
    if resolve_inside(workspace, path) != real:
        raise ToolError(f"{shown} moved while waiting for approval; nothing was written")
    try:
        # Through the parent folder's descriptor, each folder opened without following
        # links: a folder swapped for a link now fails the write instead of leaving.
        anchored.write_bytes(workspace, real, shown, data)
    except OSError as exc:
        raise ToolError(f"{shown}: cannot be written ({exc.strerror or exc})") from exc


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path, content = args["path"], args["content"]
    real, shown, before, detail = await asyncio.to_thread(_write_plan, ctx.workspace, path, content)
    data = content.encode("utf-8")
    if not detail:
        return f"{shown} already has exactly this content; nothing was written."
    await ctx.require_approval(
        ApprovalRequest(
            tool=WRITE_NAME,
            summary=f"{'Create' if before.data is None else 'Replace'} {shown}",
            detail=detail,
            always_key=ALWAYS_KEY,
            always_label=ALWAYS_LABEL,
        )
    )
    await asyncio.to_thread(_commit, ctx.workspace, path, real, shown, before, data)
    verb = "created" if before.data is None else "replaced"
    return f"Wrote {shown} ({verb}): {human_size(len(data))}, {_line_count(content):,} lines."


@dataclass(frozen=True)
class _EditPlan:
    real: Path
    shown: str
    before: _Snapshot
    after: str
    first_line: int  # where the replacement starts, 1-based
    new_lines: int
    diff: str


def _edit_plan(workspace: Path, path: str, old: str, new: str) -> _EditPlan:
    if old == "":
        raise ToolArgumentError("old must not be empty; use write_file to create a file")
    if old == new:
        raise ToolArgumentError("old and new are the same; there is nothing to change")
    real = resolve_inside(workspace, path)
    shown = display_path(workspace, real)
    size = regular_file_size(real, shown)
    if size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{shown} is {human_size(size)}; edit_file edits files up to "
            f"{human_size(MAX_EDIT_BYTES)}"
        )
    before = _snapshot(workspace, real, shown)
    if before.data is None:
        raise ToolError(f"{shown}: no such file")
    try:
        text = before.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8; edit_file would corrupt it. Use write_file with the "
            "complete content, or run_command, instead."
        ) from exc
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # The model saw lines without their CRLF endings; match them the way the file has them.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"the text given as old was not found in {shown}. Read the file again and copy "
            "the text exactly, including indentation and whitespace, without line numbers."
        )
    if count > 1:
        raise ToolError(
            f"the text given as old occurs {count} times in {shown}; include more of the "
            "surrounding lines so it matches exactly one place"
        )
    at = text.index(old)
    after = text[:at] + new + text[at + len(old) :]
    return _EditPlan(
        real=real,
        shown=shown,
        before=before,
        after=after,
        first_line=text.count("\n", 0, at) + 1,
        new_lines=max(1, _line_count(new)),
        diff=unified_diff(shown, text, after),
    )


def _snippet(plan: _EditPlan) -> str:
    lines = plan.after.splitlines()
    start = max(0, plan.first_line - 1 - SNIPPET_CONTEXT_LINES)
    end = min(len(lines), plan.first_line - 1 + plan.new_lines + SNIPPET_CONTEXT_LINES)
    end = min(end, start + MAX_SNIPPET_LINES)
    return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(start + 1, end + 1))


async def edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = args["path"]
    plan = await asyncio.to_thread(_edit_plan, ctx.workspace, path, args["old"], args["new"])
    await ctx.require_approval(
        ApprovalRequest(
            tool=EDIT_NAME,
            summary=f"Edit {plan.shown}",
            detail=plan.diff,
            always_key=ALWAYS_KEY,
            always_label=ALWAYS_LABEL,
        )
    )
    data = plan.after.encode("utf-8")
    await asyncio.to_thread(_commit, ctx.workspace, path, plan.real, plan.shown, plan.before, data)
    snippet = _snippet(plan)
    return f"Edited {plan.shown}: replaced 1 occurrence. The changed lines now read:\n{snippet}"


WRITE_TOOL = Tool(
    name=WRITE_NAME,
    description=WRITE_DESCRIPTION,
    parameters=WRITE_PARAMETERS,
    handler=write_file,
    needs_approval=True,
    aliases={"file_path": "path", "filename": "path", "file": "path", "text": "content"},
)
EDIT_TOOL = Tool(
    name=EDIT_NAME,
    description=EDIT_DESCRIPTION,
    parameters=EDIT_PARAMETERS,
    handler=edit_file,
    needs_approval=True,
    aliases={
        "file_path": "path",
        "filename": "path",
        "file": "path",
        "old_string": "old",
        "new_string": "new",
        "old_text": "old",
        "new_text": "new",
    },
)
