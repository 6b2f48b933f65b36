"""A memory model's plain-text answer, read as memory writes.

Small local models often cannot call tools: they write JSON instead, wrapped in prose or
code fences, or a tool call spelled out as text. Every item goes through the same checks
as the memory tools (engine/memory/tools.py), one by one; an item they refuse is recorded,
not fatal.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.memory.errors import MemoryStoreError
from engine.memory.tools import MemoryToolState, plan_fact, plan_lesson, queue_fact, queue_lesson
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError
from engine.tools.registry import ToolRegistry


def json_values(text: str) -> list[Any]:
    """JSON values in a model's answer: the whole text, fenced blocks, or the outermost
    braces; small models wrap their JSON in prose or code fences."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates += re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.DOTALL)
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    out: list[Any] = []
    for candidate in candidates:
        try:
            out.append(json.loads(candidate))
        except (json.JSONDecodeError, ValueError):
            continue
    return out


def items_under(value: Any, *keys: str) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    if isinstance(value, dict):
        for key in keys:
            got = value.get(key)
            if isinstance(got, list):
                return [v for v in got if isinstance(v, dict)]
    return []


async def apply_json_answer(
    state: MemoryToolState,
    text: str,
    registry: ToolRegistry,
    ctx: ToolContext,
    *,
    sourced: bool = True,
) -> None:
    """The JSON fallback: the same checks as the tools, item by item. Without `sourced` (a
    request that showed no source IDs) a quote is matched in any source of the pass, and a
    source the answer names anyway is not read."""
    values = json_values(text)
    if not values:
        return
    value = values[0]
    if isinstance(value, dict) and "name" in value and "arguments" in value:
        # A tool call written out as text.
        arguments = value.get("arguments")
        if not sourced and isinstance(arguments, dict):
            arguments = {k: v for k, v in arguments.items() if k != "source"}
        await registry.call(str(value["name"]), arguments, ctx)
        return
    for item in items_under(value, "memories", "facts"):
        action = str(item.get("action") or "create").lower()
        try:
            plan = plan_fact(
                state,
                action="amend" if action == "amend" else "create",
                scope=item.get("scope"),
                subject=item.get("subject") or item.get("topic"),
                content=item.get("content") or item.get("fact"),
                quote=item.get("quote"),
                source=item.get("source") if sourced else None,
                require_view=False,
            )
            queue_fact(state, plan)
        except (MemoryStoreError, ToolError) as exc:
            state.refused.append(str(exc))
    if isinstance(value, dict):
        for item in items_under(value.get("lessons"), "lessons"):
            try:
                queue_lesson(
                    state,
                    plan_lesson(
                        state,
                        scope=item.get("scope"),
                        subject=item.get("subject") or item.get("topic"),
                        content=item.get("content") or item.get("lesson"),
                    ),
                )
            except (MemoryStoreError, ToolError) as exc:
                state.refused.append(str(exc))
