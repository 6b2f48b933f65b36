"""The small objects a session hands the agent loop and the tools in its own place.

The loop and the tool layer take narrow protocols (a tool runner, an approver); these
adapters meet them from a session's state without giving either the session. (The loop's
conversation is engine/session/conversation.py's `Conversation` itself.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from engine.agent.types import ToolRun
from engine.commands import NOTICE_VIEW_FALLBACK, VIEW_AGENT_EDITOR, VIEW_NEW_AGENT
from engine.config.credentials import Credentials
from engine.context import WorkState
from engine.context.constants import RESULT_CHARS_PER_TOKEN
from engine.events import EventSink, NoticeEvent, StateEvent
from engine.memory import SessionMemory
from engine.messages import Message, ToolCall, model_messages
from engine.redaction import NOTICE_SECRET_REDACTED
from engine.tools import (
    ApprovalRequest,
    Approver,
    CompactHook,
    Decision,
    ToolContext,
    ToolRegistry,
    default_registry,
)
from engine.tools.builtin import conversation_registry
from engine.tools.compact_schemas import compact_schemas


class AnnouncingApprover:
    """Tells the window the turn is waiting on a person while an approval is open."""

    def __init__(self, inner: Approver, emit: EventSink) -> None:
        self.inner = inner
        self._emit = emit

    async def approve(self, request: ApprovalRequest) -> Decision:
        self._emit(StateEvent("waiting for approval"))
        try:
            return await self.inner.approve(request)
        finally:
            self._emit(StateEvent("streaming"))


class RegistryRunner:
    """The agent loop's tool runner over a tool registry and one conversation's context."""

    def __init__(
        self, registry: ToolRegistry, ctx: ToolContext, emit: EventSink | None = None
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self._emit = emit
        self._schemas = registry.schemas()
        self.compact = False
        # Hears a call of a name the registry lacks before it is answered (engine/mcp/joining.py).
        self.on_unknown: Callable[[str], None] | None = None

    def use_compact_schemas(self) -> None:
        """Advertise the same tools with compact descriptions (engine/tools/compact_schemas)."""
        self._schemas = compact_schemas(self.registry.schemas())
        self.compact = True

    def use_full_schemas(self) -> None:
        """Advertise the tools with their full descriptions (a window that has room again)."""
        self._schemas = self.registry.schemas()
        self.compact = False

    def schemas(self) -> list[dict[str, object]]:
        return self._schemas

    def size_results(self, tokens: int, count_tokens: Callable[[str], int]) -> None:
        """Cut tool results (and read_file pages) to `tokens`, measured by `count_tokens`."""
        self.ctx.result_budget_tokens = tokens
        self.ctx.result_budget_chars = tokens * RESULT_CHARS_PER_TOKEN
        self.ctx.count_tokens = count_tokens

    async def run(self, call: ToolCall) -> ToolRun:
        if self.on_unknown is not None and call.name not in self.registry:
            self.on_unknown(call.name)
        outcome = await self.registry.call(call.name, call.arguments, self.ctx, call_id=call.id)
        if outcome.redacted and self._emit is not None:
            self._emit(redacted_notice(call.name, outcome.redacted))
        return ToolRun(outcome.content, outcome.chars, outcome.truncated, outcome.is_error)


def redacted_notice(tool: str, found: Mapping[str, int]) -> NoticeEvent:
    """What the person is told when a tool result held secrets: neither the model nor the
    conversation got them."""
    count = sum(found.values())
    kinds = ", ".join(sorted(found))
    what = "a secret" if count == 1 else f"{count} secrets"
    return NoticeEvent(
        "warning",
        f"The {tool} result held {what} ({kinds}); each was replaced by a [redacted: …] "
        "marker before the model or the conversation saw it.",
        kind=NOTICE_SECRET_REDACTED,
        details={"tool": tool, "count": count, "kinds": kinds},
    )


def workspace_tools(
    workspace: Path | None,
    *,
    results_dir: Path,
    state: WorkState,
    approver: Approver,
    compact: CompactHook,
    memory: SessionMemory | None,
    messages: Callable[[], list[Message]],
    credentials: Credentials | None = None,
    emit: EventSink | None = None,
    mcp: bool = False,
) -> RegistryRunner | None:
    """The file tools need a workspace to stay inside; without one, and without MCP servers
    (`mcp`: their tools are attached to this registry after), the agent only chats. Without
    a folder, an MCP agent keeps the tools that act on the conversation. With memory on,
    its tools join the registry, reading the conversation's live messages. `credentials`
    are kept from the tools' children and results; `emit` hears when a result had secrets
    taken out."""
    if workspace is None and not mcp:
        return None
    known = credentials or Credentials()
    ctx = ToolContext(
        # No file tool is registered without a folder: the results folder stands in for
        # the workspace that nothing reads.
        workspace=workspace.resolve() if workspace is not None else results_dir,
        tool_results_dir=results_dir,
        work_state=state,
        approver=approver,
        compact=compact,
        credential_variables=known.variables,
        credentials=known.values,
    )
    registry = default_registry() if workspace is not None else conversation_registry()
    if memory is not None:
        for tool in memory.tools(lambda: model_messages(messages())):
            registry.register(tool)
    return RegistryRunner(registry, ctx, emit)


def view_fallback_notice(view: str, agent_file: str) -> NoticeEvent:
    """What a front end without `view` is told instead (a headless chat): where the agent's
    file is, or how to review memory. Its kind lets a front end that opens the view skip it."""
    if view == VIEW_AGENT_EDITOR:
        text = f"Edit the agent in Brim's desktop or in {agent_file}."
    elif view == VIEW_NEW_AGENT:
        known = agent_file.endswith(".toml")
        folder = str(Path(agent_file).parent) if known else "the agents folder"
        text = f"Make an agent in Brim's desktop, or write a TOML file into {folder}."
    else:
        text = "Review memory with `brim memory review`."
    return NoticeEvent("info", text, kind=NOTICE_VIEW_FALLBACK, details={"view": view})
