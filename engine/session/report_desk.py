"""What a session says of itself when asked, even while a turn runs: the rail's context
report (also `/context`), `/usage`, `/work` and `/work clear`, `/compaction` (`show N`),
and the views a command opens (`/memory`, the agent editor) with words for the headless.

`ReportDesk` reads the session's state as it is at each ask, through callables for what the
session replaces (its provider, its memory, the counter before the loop is wired); building
a report never wires the loop (engine/session/reports.py builds each one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import engine.session.reports as reports
from engine.commands import VIEW_AGENT_EDITOR, Action, Route
from engine.config import AgentConfig
from engine.events import EventSink, ViewRequestEvent
from engine.mcp.hub import McpHub
from engine.providers.base import Provider
from engine.report.context_report import ContextReport
from engine.session.adapters import view_fallback_notice
from engine.session.conversation import Conversation
from engine.session.ledger import ContextLedger
from engine.session.memory_link import MemoryLink
from engine.session.restoring import CompactionDesk
from engine.session.window_desk import WindowDesk
from engine.tokens import TokenCounter


class ReportDesk:
    """The answers to the commands that only read (or clear the work state), for a session."""

    def __init__(
        self,
        agent: AgentConfig,
        workspace: Path | None,
        conversation: Conversation,
        conversation_id: Callable[[], str],
        *,
        desk: WindowDesk,
        ledger: ContextLedger,
        provider: Callable[[], Provider | None],
        counter: Callable[[], TokenCounter | None],
        memory: Callable[[], MemoryLink],
        mcp: McpHub,
        compactions: CompactionDesk,
        emit: EventSink,
    ) -> None:
        self._agent = agent
        self._workspace = workspace
        self._conversation = conversation
        self._conversation_id = conversation_id
        self._desk = desk
        self._ledger = ledger
        self._provider = provider
        self._counter = counter
        self._memory = memory
        self._mcp = mcp
        self._compactions = compactions
        self._emit = emit

    def answer(self, decision: Route) -> None:
        """A report or a view, `decision` accepted (told before this)."""
        if decision.action is Action.REPORT and decision.command is not None:
            self.answer_command(decision.command.text, decision.argument)
            return
        self._emit(ViewRequestEvent(decision.view))  # and words for the headless
        if decision.view != VIEW_AGENT_EDITOR:
            self._memory().emit_pending(always=True)
        where = str(self._agent.source_path or "the agent's file")
        self._emit(view_fallback_notice(decision.view, where))

    def context_report(self) -> ContextReport:
        """The rail's numbers now: windowless before the loop is wired (this never wires it)."""
        window = self._desk.window
        provider = self._provider()
        agent = self._agent
        plan = provider.sampling_plan(agent.model, agent.sampling) if provider else None
        return reports.context_report(
            loop=self._desk.loop,
            counter=self._counter(),
            messages=self._conversation.messages,
            tracker=self._ledger.tracker,
            source=window.source if window is not None else "",
            provider=provider,
            workspace=self._workspace,
            memory_line=self._memory().line,
            max_iterations=self._agent.max_iterations,
            mcp=self._mcp,
            sampling=plan,
        )

    def answer_command(self, command: str, argument: str = "") -> None:
        """`/context`, `/usage`, `/work` answered with their report; `/work clear` forgets
        the work state and the journal of compactions first; `/compaction` (`show N`)."""
        if command == "/compaction":
            self._compactions.answer(argument)
            return
        store, conversation = self._conversation.store, self._conversation_id()
        folder = self._conversation.work_folder()
        if command == "/work clear":
            reports.clear_work_state(folder)
        answer = reports.command_answer(
            command,
            self.context_report,
            lambda: reports.usage_report(store, conversation),
            lambda: (reports.work_state_text(folder), self._desk.tools is not None),
        )
        if answer is not None:
            self._emit(answer)

    def estimate_now(self) -> int:
        """The history's tokens now, with the tools the loop offers (or would offer)."""
        loop = self._desk.loop
        tools = loop.tools if loop is not None else self._desk.tools
        return reports.history_tokens(self._counter(), self._conversation.messages, tools)
