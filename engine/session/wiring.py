"""How a session's agent loop is put together: one function from its parts to the loop.

`wire_agent_loop` builds the tools (none when the model cannot call them; no file tools
without a folder, though an agent's MCP tools go out), decides whether
their schemas go compact (`decide_tool_schemas`, again when the engine reveals another
window), and builds the context ladder and the loop over the
conversation. It changes nothing of the session: the session keeps the loop it returns, and
says the pin advice it returns (the fixed prefix leaves too little of the window).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.agent.loop import AgentLoop
from engine.config import AgentConfig, load_agents
from engine.config.credentials import Credentials, known_credentials
from engine.context import (
    ContextManager,
    Journal,
    SummaryRequest,
    SummaryResult,
    WorkState,
    render_work_state,
)
from engine.context.compaction import BeforeSummarize
from engine.context.replay import checkpoint_instruction
from engine.context.summarizer_record import SummarizerRecord
from engine.context.summarizer_seed import seed_for
from engine.events import EventSink
from engine.mcp.hub import McpHub
from engine.memory import SessionMemory
from engine.memory.replayed_scan import replay_instruction
from engine.messages import Message, user
from engine.paths import BrimPaths
from engine.providers.base import PromptText, Provider
from engine.session.adapters import RegistryRunner, workspace_tools
from engine.session.budget import fit_tool_schemas, output_reserve
from engine.session.conversation import Conversation
from engine.session.last_request import RequestBinding
from engine.session.tools_offer import tools_offered
from engine.tokens import TokenCounter
from engine.tools import Approver, ToolResultStore
from engine.window.resolution import WindowResolution


@dataclass(frozen=True)
class LoopSetting:
    """Where the loop works and who answers for it, beside its five main parts."""

    paths: BrimPaths
    workspace: Path | None
    ephemeral: bool  # no journal
    approver: Approver
    counter: TokenCounter
    summarizer_window: int | None
    summarizer_shares_cache: bool
    mcp: McpHub | None = None  # the conversation's MCP servers (engine/mcp/hub.py)


@dataclass(frozen=True)
class LoopHooks:
    """The session's side of the loop: its event sink, the ladder's sink (the context
    ledger), the summarizer, the summarize_context tool's answer, the memory extraction
    compaction runs first (None: none), and who hears a window the engine reveals."""

    sink: EventSink
    ladder_sink: EventSink
    summarize: Callable[[SummaryRequest], Awaitable[SummaryResult]]
    compact_tool: Callable[[], Awaitable[str]]
    before_summarize: BeforeSummarize | None
    on_window: Callable[[WindowResolution], None]


@dataclass(frozen=True)
class WiredLoop:
    loop: AgentLoop
    tools: RegistryRunner | None
    pin_advice: str | None  # the notice to save when the fixed prefix leaves no room


def wire_agent_loop(
    agent: AgentConfig,
    provider: Provider,
    window: WindowResolution,
    conversation: Conversation,
    memory: SessionMemory | None,
    *,
    setting: LoopSetting,
    hooks: LoopHooks,
) -> WiredLoop:
    """The agent loop for `conversation` on `window`, with memory's tools and provider
    wrapper when `memory` is given."""
    counter = setting.counter
    paths = setting.paths
    work = paths.conversation_dir(agent.name, conversation.id)
    journal = None if setting.ephemeral else Journal(work / "journal.jsonl")
    state = WorkState(work / "state.json")
    results_dir = paths.tool_results_dir(agent.name, conversation.id)
    # A model that cannot call tools gets none: Ollama refuses the whole request. MCP tools
    # need no folder; the file tools do.
    offered = tools_offered(setting.workspace, window, mcp=bool(setting.mcp))
    tools = workspace_tools(
        setting.workspace if offered else None,
        mcp=offered and bool(setting.mcp),
        results_dir=results_dir,
        state=state,
        approver=setting.approver,
        compact=hooks.compact_tool,
        memory=memory,
        messages=lambda: conversation.messages,
        credentials=_credentials(agent, paths) if offered else None,
        emit=hooks.sink,
    )
    ladder_sink = hooks.ladder_sink
    if tools is not None and setting.mcp:
        setting.mcp.attach(tools.registry, counter.count_text, window.window)
        # Loaded MCP tools join the tools block when a compaction rebuilds the prefix.
        setting.mcp.joining.bind(tools)
        tools.on_unknown = setting.mcp.joining.unknown_tool
        ladder_sink = setting.mcp.joining.watching(ladder_sink)
    reserve = output_reserve(agent, provider)
    conversation.last_requests.bind(_request_binding(agent, provider, counter, conversation, hooks))
    advice = decide_tool_schemas(tools, agent, provider, counter, window, conversation.messages)
    context = ContextManager(
        window=window.window,
        count_message=counter.count_message,
        summarize=hooks.summarize,
        compaction_ratio=agent.compaction_ratio,
        reserve_tokens=agent.compaction_reserve_tokens,
        store_result=ToolResultStore(results_dir).store,
        journal=journal,
        work_state=lambda: render_work_state(state.read()),
        sink=ladder_sink,
        before_summarize=hooks.before_summarize,
        output_reserve=reserve,
        summarizer_window=setting.summarizer_window,
        summarizer_shares_cache=setting.summarizer_shares_cache,
        # After the kept messages only where the server was found to move them (probed at
        # the start); first where it cannot, or was not asked: moving it buys nothing there.
        checkpoint_after_kept=provider.cache_reuse(agent.model).reuses is True,
        tools_offered=tools is not None,
        summarizer_record=summarizer_record(agent, provider, setting, served=window.model),
        instruction_tokens=replay_instruction_tokens(counter),
        on_sent=conversation.last_requests.record,
    )
    loop = AgentLoop(
        agent=agent,
        provider=memory.wrap(provider) if memory else provider,
        window=window,
        counter=counter,
        context=context,
        sink=hooks.sink,
        conversation=conversation,
        store=conversation.store,
        conversation_id=conversation.id,
        tools=tools,
        on_window=hooks.on_window,
    )
    return WiredLoop(loop, tools, advice)


def decide_tool_schemas(
    tools: RegistryRunner | None,
    agent: AgentConfig,
    provider: Provider,
    counter: TokenCounter,
    window: WindowResolution,
    messages: list[Message],
) -> str | None:
    """Full or compact tool descriptions for `window`: when the loop is wired, and again
    whenever the engine reveals another window (a guess, an error's figure or a reload the
    loop accounted against before). Returns the pin advice, if the prefix leaves no room."""
    if tools is None:
        return None
    reserve = output_reserve(agent, provider)
    space = window.window - reserve
    return fit_tool_schemas(
        tools, counter, messages, space=space, window=window.window, provider=agent.provider
    )


def _request_binding(
    agent: AgentConfig,
    provider: Provider,
    counter: TokenCounter,
    conversation: Conversation,
    hooks: LoopHooks,
) -> RequestBinding:
    """What "What the model saw" reads: this loop's counter and engine (the provider itself,
    not memory's wrapper: rendering is no chat request)."""

    async def render(messages: list[Message], tools: list[dict[str, Any]]) -> PromptText | None:
        return await provider.render_prompt(agent.model, messages, tools)

    return RequestBinding(
        counter=counter,
        render=render if provider.renders_prompts else None,
        emit=hooks.sink,
        history=conversation.live,
    )


def _credentials(agent: AgentConfig, paths: BrimPaths) -> Credentials:
    """The keys of this agent and of every agent configured beside it (a tool must not
    read another agent's key either)."""
    try:
        others, _ = load_agents(paths.agents_dir)
    except OSError:
        others = []
    return known_credentials([agent, *others])


def replay_instruction_tokens(counter: TokenCounter) -> int:
    """The longest instruction a request on the cached conversation ends with: the
    checkpoint's or the memory extraction's (its memory index aside)."""
    checkpoint = checkpoint_instruction(0, None)  # the shortest answer: 100 words
    memory = replay_instruction("the user's assistant")
    return max(counter.count_message(user(text)) for text in (checkpoint, memory))


# What each summarizer model has shown it can write (engine/context/summarizer_record.py).
SUMMARIZER_RECORD_FILE = "summarizers.json"


def summarizer_record(
    agent: AgentConfig, provider: Provider, setting: LoopSetting, *, served: str = ""
) -> SummarizerRecord:
    """The record of the model that writes this conversation's checkpoints, on this engine;
    an ephemeral run keeps it in memory only. `served`: the id the engine serves the agent's
    model under (llama-server's GGUF path where the agent names none), by which a model the
    bench measured is known (engine/context/summarizer_seed.py)."""
    shares = setting.summarizer_shares_cache
    model = agent.model if shares else agent.summarizer_model
    key = f"{provider.kind}|{provider.base_url}|{model or 'default'}"
    path = None if setting.ephemeral else setting.paths.data_dir / SUMMARIZER_RECORD_FILE
    seed = seed_for(model or "", served) if shares else seed_for(model or "")
    return SummarizerRecord.load(key, path, seed)
