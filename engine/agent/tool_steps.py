"""One answer's tool calls, run in order: each call told, run (or answered without running)
and its result stored and told, so the model sees a result for every call it made.

A tool bug is the tool's result, never the end of the turn; a cancel stores "Cancelled by
the user." for the call it stopped, so the history stays whole.
"""

from __future__ import annotations

import asyncio
import logging

from engine.agent.answer_calls import calls_capped, not_run_result
from engine.agent.telling import Teller
from engine.agent.types import Conversation, ToolRun, ToolRunner
from engine.events import (
    NOTICE_CALLS_CAPPED,
    TOOL_PREVIEW_CHARS,
    EventSink,
    ToolCallEvent,
    ToolResultEvent,
)
from engine.messages import ToolCall, tool_result

log = logging.getLogger(__name__)


async def run_tool_steps(
    calls: tuple[ToolCall, ...],
    *,
    tools: ToolRunner | None,
    conversation: Conversation,
    sink: EventSink,
    tell: Teller,
    not_run: int = 0,
) -> None:
    """With `not_run`, the last call stands for the calls past the cap on calls per
    answer (answer_calls.py): it is answered, not run."""
    for index, call in enumerate(calls):
        sink(ToolCallEvent(id=call.id, name=call.name, arguments=call.arguments))
        if not_run and index == len(calls) - 1:
            run = not_run_result(not_run, ran=index)
        elif tools is None:
            run = ToolRun("Error: this agent has no tools.", 0, False, True)
        else:
            try:
                run = await tools.run(call)
            except asyncio.CancelledError:
                conversation.append(tool_result(call, "Cancelled by the user."))
                raise
            except Exception as exc:  # a tool bug must not kill the turn
                log.exception("tool %s failed", call.name)
                run = ToolRun(f"Error: the tool failed: {exc}", 0, False, True)
        conversation.append(tool_result(call, run.content))
        sink(
            ToolResultEvent(
                id=call.id,
                name=call.name,
                chars=run.chars,
                truncated=run.truncated,
                preview=run.content[:TOOL_PREVIEW_CHARS],
                is_error=run.is_error,
            )
        )
    if not_run:
        text, details = calls_capped(not_run, ran=len(calls) - 1)
        tell.mark(NOTICE_CALLS_CAPPED, text, details, level="warning")
