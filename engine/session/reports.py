"""What a session shows of itself, built from what is passed in: the rail's context report
(also `/context`), `/usage`, and `/work` (the agent's work state for a conversation).

Functions, not session methods: each takes the state it reads, so the report of a session
before its loop is wired is the windowless report, and building one never wires anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.agent.loop import AgentLoop, ToolRunner
from engine.context import render_work_state
from engine.context.work_state import work_folder_files
from engine.events import ContextReportEvent, Event, UsageReportEvent, WorkStateEvent
from engine.mcp.hub import McpHub
from engine.memory import standing_for
from engine.messages import Message, alternating, model_messages
from engine.prompt import project_instructions
from engine.providers.base import Provider
from engine.providers.sampling_source import SamplingPlan
from engine.report.context_report import (
    ContextReport,
    RequestTracker,
    UsageReport,
    build_context_report,
    build_usage_report,
    categories,
)
from engine.store import Store
from engine.tokens import TokenCounter


def context_report(
    *,
    loop: AgentLoop | None,
    counter: TokenCounter | None,
    messages: list[Message],
    tracker: RequestTracker,
    source: str,
    provider: Provider | None,
    workspace: Path | None,
    memory_line: str,
    max_iterations: int | None,
    mcp: McpHub | None = None,
    sampling: SamplingPlan | None = None,
) -> ContextReport:
    """The rail's numbers now (engine/report/context_report.py); every message count is cached.
    Without a wired loop (the window is not known yet) only the tracker's figures. `provider`
    names the engine, and holds what its cache-reuse probe found for the loop's model."""
    if loop is None or counter is None:
        return build_context_report(
            budget=None, source="", estimate=0, tracker=tracker, sampling=sampling
        )
    engine = provider.kind if provider is not None else ""
    reuse = provider.cache_reuse(loop.agent.model).reuses if provider is not None else None
    # The loop's own tools: it drops them when the engine refuses them.
    schemas = loop.tools.schemas() if loop.tools is not None else []
    live = model_messages(messages)
    instructions = project_instructions(workspace.resolve() if workspace else None)
    rows = categories(
        live,
        count_message=counter.count_message,
        count_text=counter.count_text,
        schema_tokens=counter.count_tools(schemas),
        framing_tokens=counter.request_overhead(bool(schemas)),
        instructions=instructions,
        memory_texts=_memory_wordings(memory_line),
    )
    return build_context_report(
        budget=loop.context.budget,
        source=source,
        estimate=next_request_tokens(loop, counter, live, schemas, max_iterations),
        tracker=tracker,
        categories=rows,
        instructions=[item.name for item in instructions],
        exact_breakdown=counter.estimate_is_exact,
        counting=f"{engine}: {counter.describe()}",
        compact_tools=bool(getattr(loop.tools, "compact", False)),
        exact_estimate=counter.estimate_is_exact,
        mcp=mcp.report(counter.count_tools, schemas) if mcp and loop.tools is not None else None,
        sampling=sampling,
        moved_cache_reuse=reuse,
    )


def _memory_wordings(line: str) -> list[str]:
    """The standing line in either wording (with tools or without): the system message
    holds the one its request was worded for."""
    if not line:
        return []
    return list(dict.fromkeys(standing_for(line, tools=t) for t in (True, False)))


def next_request_tokens(
    loop: AgentLoop,
    counter: TokenCounter,
    live: list[Message],
    schemas: list[dict[str, object]],
    max_iterations: int | None,
) -> int:
    """What the next request costs if sent now: the history with the nudge the ladder
    would add, in the wire form (the summary inside the system message, user turns
    joined), with the tools; counted as the loop counts what it sends."""
    request = loop.context.next_request(
        live,
        overhead_tokens=loop.overhead_tokens(),
        max_iterations=max_iterations,
        tools_offered=loop.tools is not None,
    )
    return counter.count_request(alternating(request), schemas)


def history_tokens(
    counter: TokenCounter | None, messages: list[Message], tools: ToolRunner | None
) -> int:
    """Brim's count of the history as it stands, with the tools' schemas (0 uncounted)."""
    if counter is None:
        return 0
    schemas = tools.schemas() if tools is not None else []
    return counter.count_request(model_messages(messages), schemas)


def command_answer(
    command: str,
    context: Callable[[], ContextReport],
    usage: Callable[[], UsageReport],
    work: Callable[[], tuple[str, bool]],
) -> Event | None:
    """The event answering a read-only slash command (`/work clear` once it cleared).
    `work()`: the work state's text and whether the agent has the tools to record one."""
    if command == "/context":
        return ContextReportEvent(context(), snapshot=True)
    if command == "/usage":
        return UsageReportEvent(usage())
    if command == "/work":
        text, tools = work()
        return WorkStateEvent(text, tools=tools)
    if command == "/work clear":
        return WorkStateEvent("", cleared=True)
    return None


def usage_report(store: Store | None, conversation_id: str) -> UsageReport:
    """`/usage` for a conversation: every request it made, summaries and memory's included,
    with the total by kind of request."""
    if store is None or not conversation_id:
        return build_usage_report([])
    return build_usage_report(
        store.usage_summary(conversation_id),
        store.usage_summary(conversation_id, by_purpose=True),
    )


def work_state_text(work_folder: Path) -> str:
    """`/work`: the agent's work state kept in `work_folder`, as text ("" when none)."""
    _, state = work_folder_files(work_folder)
    try:
        return render_work_state(state.read())
    except Exception as exc:  # a hand-edited, broken state.json: say so, do not fail
        return f"The work state could not be read: {exc}"


def clear_work_state(work_folder: Path) -> None:
    """`/work clear`: forget the work state and the journal of compactions (a resumed
    conversation no longer folds it back in)."""
    journal, state = work_folder_files(work_folder)
    state.clear()
    journal.clear()
