"""What a tool call may reach: the workspace, the conversation's stores, the approver.

The agent loop builds one `ToolContext` per conversation (or per run) and hands it to every
call; a tool touches nothing that is not on it, so a test builds one over `tmp_path` and
exercises the real tool.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from engine.context.work_state import WorkState
from engine.tools.approval import ApprovalRequest, Approver, Decision, DenyAll
from engine.tools.errors import ToolDenied
from engine.tools.result_store import ToolResultStore
from engine.tools.shaping import DEFAULT_RESULT_BUDGET_CHARS, ToolMetrics

log = logging.getLogger(__name__)

# The summarize_context hook: runs the same compaction as /compact and returns a short
# description of what it did ("Compacted 64 → 12 messages (saved ~48000 tokens)").
CompactHook = Callable[[], Awaitable[str]]


@dataclass
class ToolContext:
    workspace: Path
    tool_results_dir: Path | None = None  # None: results cannot be stored for retrieval
    work_state: WorkState | None = None  # None: update_work_state is unavailable
    approver: Approver = field(default_factory=DenyAll)
    compact: CompactHook | None = None  # None: summarize_context is unavailable
    result_budget_chars: int = DEFAULT_RESULT_BUDGET_CHARS
    metrics: ToolMetrics = field(default_factory=ToolMetrics)
    # The same budget in tokens, with the counter that measures it (the agent loop sets both
    # from the space the window leaves): a result dense in digits or JSON is cut shorter.
    result_budget_tokens: int | None = None
    count_tokens: Callable[[str], int] | None = None
    # Brim's credentials, kept out of tool children's environments and tool results: the
    # variables that hold engine keys (every agent's api_key_env, the one Brim hands its own
    # children) and the keys themselves.
    credential_variables: frozenset[str] = frozenset()
    credentials: tuple[str, ...] = field(default=(), repr=False)

    @property
    def result_store(self) -> ToolResultStore | None:
        if self.tool_results_dir is None:
            return None
        return ToolResultStore(self.tool_results_dir)

    async def require_approval(self, request: ApprovalRequest) -> Decision:
        """The approver's allow, or `ToolDenied`. An approver that fails counts as a deny:
        nothing runs on an answer nobody gave."""
        try:
            decision = await self.approver.approve(request)
        except Exception as exc:
            log.warning("the approver failed for %s; treating it as a deny", request.tool)
            raise ToolDenied(
                f"{request.tool} was not run: asking for approval failed ({exc})"
            ) from exc
        try:
            decision = Decision(decision)
        except ValueError:
            decision = Decision.DENY
        if not decision.allows:
            raise ToolDenied(
                f"{request.tool} was denied by the user: {request.summary}. Nothing was "
                "run or changed. Do not retry the same action; ask the user or take another "
                "approach."
            )
        return decision
