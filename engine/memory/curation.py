"""The learn pass's curation call: the session's memory diff and the waiting suggestions
shown to the model with revise_memory (delete a stale entry, rewrite a lesson), its answer
queued for review like every other write.
"""

from __future__ import annotations

from engine.memory.errors import MemoryStoreError
from engine.memory.extractor import ScanReport
from engine.memory.json_answers import items_under, json_values
from engine.memory.layout import Scope
from engine.memory.plaintext import strip_controls
from engine.memory.queue import Suggestion
from engine.memory.requests import Complete
from engine.memory.service import MemoryService
from engine.memory.sizing import TOOLS_SHARE, Room
from engine.memory.sources import SourceSet
from engine.memory.store import Snapshot
from engine.memory.tools import MemoryToolState, plan_revision, queue_lesson, revise_tool
from engine.messages import Message, system, user
from engine.resources import prompt as load_prompt
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError
from engine.tools.registry import ToolRegistry

LEARNER_ID = "memory-learner"
# The prompt (resources/prompts/): `{actor}` is filled in, doubled braces are literal.
CURATION_SYSTEM = load_prompt("memory_curator")


def memory_diff(start: Snapshot | None, now: Snapshot) -> str:
    """The session's memory diff: entries now, and what changed since the chat started."""
    lines = ["Memory now:"]
    for item in now.entries:
        lines.append(
            f"- {item.canonical} ({item.entry.kind}, hash {item.hash[:12]}): "
            f"{strip_controls(item.entry.first_line)[:160]}"
        )
    if len(lines) == 1:
        lines.append("- (empty)")
    if start is None:
        lines.append("Changes in this session: unknown (no snapshot from the chat's start).")
        return "\n".join(lines)
    before = start.digest()
    after = now.digest()
    changes = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            changes.append(f"- added {path}: {strip_controls(after[path][0])[:160]}")
        elif path not in after:
            changes.append(f"- removed {path} (was: {strip_controls(before[path][0])[:160]})")
        elif before[path][1] != after[path][1]:
            changes.append(f"- changed {path}: {strip_controls(after[path][0])[:160]}")
    lines.append("Changes in this session:")
    lines.extend(changes or ["- (none)"])
    return "\n".join(lines)


async def run_curation(
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    diff: str,
    waiting: list[Suggestion],
    room: Room,
    actor: str = LEARNER_ID,
) -> ScanReport:
    """One curation call; its revise_memory calls (or JSON answer) are queued. What it is
    shown is cut to the window; the tools are offered where they fit."""
    report = ScanReport()
    state = MemoryToolState(service, scopes, lambda: SourceSet("", ()), "queue", actor=actor)
    registry = ToolRegistry([revise_tool(state)])
    ctx = ToolContext(workspace=service.root)
    system_text = CURATION_SYSTEM.format(actor=actor)
    schemas = registry.schemas()
    lines = diff.splitlines()
    shown = [f"- {s.id} {s.describe()}" for s in waiting]
    keep_lines, keep_shown = len(lines), len(shown)

    def messages() -> list[Message]:
        parts = lines[:keep_lines] + (["- …"] if keep_lines < len(lines) else [])
        queue = shown[:keep_shown] or ["- (none)"]
        if keep_shown < len(shown):
            queue.append(f"- … ({len(shown) - keep_shown} more)")
        prompt = "\n".join(parts) + "\n\nSuggestions waiting for review:\n" + "\n".join(queue)
        return [system(system_text), user(prompt + "\n\nSuggest revisions, or none.")]

    if await room.count(messages(), schemas) > TOOLS_SHARE * room.window:
        schemas = []
    max_tokens = await room.output_for(messages(), schemas)
    while not max_tokens and (keep_shown > 0 or keep_lines > 1):
        if keep_shown > 0:
            keep_shown //= 2
        else:
            keep_lines //= 2
        max_tokens = await room.output_for(messages(), schemas)
    if not max_tokens:
        report.skipped = f"a {room.window:,}-token window leaves no room for the curation call"
        return report
    answer = await complete(messages(), schemas, max_tokens)
    report.steps = 1
    for call in answer.calls:
        await registry.call(call.name, call.arguments, ctx, call_id=call.id)
    if not answer.calls:
        for value in json_values(answer.text)[:1]:
            for item in items_under(value, "revisions"):
                try:
                    queue_lesson(
                        state,
                        plan_revision(
                            state,
                            action=str(item.get("action", "")).lower(),
                            path=str(item.get("path", "")),
                            content=item.get("content"),
                            reason=item.get("reason"),
                        ),
                    )
                except (MemoryStoreError, ToolError) as exc:
                    state.refused.append(str(exc))
    report.queued = list(state.queued)
    report.refused = list(state.refused)
    return report
