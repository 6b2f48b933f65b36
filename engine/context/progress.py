"""What the run already did, read mechanically from its own tool calls.

The checkpoint covers the summarized half of a history; the half kept verbatim is covered
here instead, from the tool calls themselves, so the resumed model never has to guess what
it already did (and a small model's summary cannot forget a file it read).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.context.constants import COMMAND_TOOLS, LOOK_TOOLS, READ_TOOLS, WRITE_TOOLS
from engine.messages import Message, ToolCall

PATH_KEYS = ("path", "file_path", "file", "filename")
MAX_LISTED = 40
MAX_COMMAND_CHARS = 160


def call_path(call: ToolCall) -> str | None:
    args = call.parsed_arguments()
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _command(call: ToolCall) -> str | None:
    args = call.parsed_arguments()
    value = args.get("command") or args.get("cmd")
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if not isinstance(value, str) or not value.strip():
        return None
    value = " ".join(value.split())
    return value if len(value) <= MAX_COMMAND_CHARS else value[:MAX_COMMAND_CHARS] + "…"


def _answered_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """Tool calls in order, only those whose result is in the history (a call that never ran
    did nothing to remember)."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return [c for m in messages if m.role == "assistant" for c in m.tool_calls if c.id in answered]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def paths_read(messages: Sequence[Message]) -> list[str]:
    """Every file the messages' answered read calls opened, in first-read order."""
    return _unique(
        [p for c in _answered_calls(messages) if c.name in READ_TOOLS and (p := call_path(c))]
    )


def _describe(call: ToolCall) -> str:
    if call.name in COMMAND_TOOLS and (cmd := _command(call)):
        return f"{call.name} `{cmd}`"
    path = call_path(call)
    return f"{call.name} {path}" if path else call.name


def _listing(items: list[str]) -> str:
    shown = items[-MAX_LISTED:]
    more = len(items) - len(shown)
    text = ", ".join(shown)
    return f"{text} (and {more} earlier)" if more else text


def extract_run_progress(messages: Sequence[Message]) -> str:
    """The progress note for the first request after a compaction: files read, files
    modified, commands run, and the most recent action. Empty when no tool ran."""
    calls = _answered_calls(messages)
    if not calls:
        return ""
    read = paths_read(messages)
    looked = _unique([p for c in calls if c.name in LOOK_TOOLS and (p := call_path(c))])
    written = _unique([p for c in calls if c.name in WRITE_TOOLS and (p := call_path(c))])
    commands = _unique([cmd for c in calls if c.name in COMMAND_TOOLS and (cmd := _command(c))])
    lines = ["Already done in the messages kept after the summary (do not redo it):"]
    if read:
        lines.append(f"- Files read: {_listing(read)}")
    if looked:
        lines.append(f"- Listed or searched: {_listing(looked)}")
    if written:
        lines.append(f"- Files modified: {_listing(written)}")
    if commands:
        lines.append(f"- Commands run: {_listing([f'`{c}`' for c in commands])}")
    lines.append(f"- Most recent action: {_describe(calls[-1])}")
    return "\n".join(lines)


def span_progress(messages: Sequence[Message]) -> dict[str, list[str]]:
    """Done and In Progress of a summarized span, read from its own tool calls: the files it
    edited and the commands it ran, and its last step. For a checkpoint whose summarizer
    was not asked for them (the guided questions) or wrote nothing (the mechanical one)."""
    calls = _answered_calls(messages)
    if not calls:
        return {}
    written = _unique([p for c in calls if c.name in WRITE_TOOLS and (p := call_path(c))])
    commands = _unique([cmd for c in calls if c.name in COMMAND_TOOLS and (cmd := _command(c))])
    done = [f"- edited `{p}`" for p in written] + [f"- ran `{c}`" for c in commands]
    out = {"In Progress": [f"- the last step was {_describe(calls[-1])}"]}
    if done:
        out["Done"] = done
    return out
