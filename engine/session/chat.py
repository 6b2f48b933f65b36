"""One conversation with one agent: the object the desktop and the headless CLI both drive.

The flow of a turn: user text → persisted first → the agent loop prepares the request,
streams it, runs tools → events → usage lands → calibration and receipts. Everything the
session learns is emitted as typed events (engine/events.py) through one sink.

`ChatSession` is the facade over objects with one job each (engine/session/*.py): the
`Conversation` (messages, their persistence), the `ContextLedger` (the rail's bookkeeping),
the `Summarizer`, the `MemoryLink`, the `WindowDesk` (the window, the system prompt, the
wired loop), the `TurnRunner` (the running turn, `/compact`) and the `ReportDesk` (what
`/context`, `/usage`, `/work` and the views answer). It admits one submission at a time,
routes commands, switches conversations and opens and closes the session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from engine.agent.loop import AgentLoop
from engine.commands import VIEW_NEW_CONVERSATION, Action, Route, route
from engine.config import AgentConfig
from engine.conversation_claim import ConversationBusy, ConversationClaim
from engine.events import (
    ErrorEvent,
    Event,
    EventSink,
    StateEvent,
    ViewRequestEvent,
    WithdrawnEvent,
)
from engine.mcp.hub import McpHub
from engine.messages import Message, model_messages, notice, user
from engine.paths import BrimPaths
from engine.providers.base import Provider, StreamDone
from engine.report.context_report import ContextReport
from engine.session.adapters import AnnouncingApprover
from engine.session.admission import Admission, busy_refusal
from engine.session.ahead import CompactionAhead
from engine.session.conversation import Conversation
from engine.session.engine_calls import LoadProgress, provider_for, usage_recorder
from engine.session.learning import SessionLearning
from engine.session.ledger import ContextLedger, LedgerInputs, keeping_notices, notice_event
from engine.session.memory_link import MemoryInputs, MemoryLink
from engine.session.report_desk import ReportDesk
from engine.session.restoring import CompactionDesk
from engine.session.store_failure import store_failure
from engine.session.summarizer import Summarizer
from engine.session.turns import TurnRunner
from engine.session.window_desk import WindowDesk
from engine.session.wiring import LoopSetting
from engine.store import Receipt, StoreError, UnknownConversation
from engine.tokens import TokenCounter, counter_for
from engine.tools import Approver, ConversationApprover, DenyAll
from engine.window.resolution import WindowResolution

log = logging.getLogger(__name__)


class ChatSession:
    """One conversation with one agent. All coroutines run on the engine's asyncio loop."""

    def __init__(
        self,
        agent: AgentConfig,
        paths: BrimPaths,
        sink: EventSink,
        *,
        conversation_id: str | None = None,
        workspace: Path | None = None,
        provider: Provider | None = None,
        ephemeral: bool = False,
        approver: Approver | None = None,
        memory: bool = False,
        reflect_on_close: bool = False,
        compact_ahead: bool = False,
    ) -> None:
        self.agent = agent
        self.paths = paths
        self._sink = sink
        self._requested_conversation = conversation_id
        self._preset_conversation = conversation_id or ""  # what conversation_id says first
        self.workspace = workspace
        self.ephemeral = ephemeral
        self._provider = provider
        self._counter: TokenCounter | None = None
        self._admission = Admission()  # one submission at a time; waits for the start
        kept = keeping_notices(lambda message: self._append(message, emit=True), self._emit)
        self._mcp = McpHub.for_agent(agent, kept, paths)  # each server at its first use
        # Commands and writes run only on an explicit allow; headless default is deny.
        self.approver = ConversationApprover(AnnouncingApprover(approver or DenyAll(), self._emit))
        self.conversation = Conversation(  # the rail shows a rewritten history at once
            paths, agent.name, on_replaced=lambda: self.ledger.emit_report()
        )
        # What the rail shows (engine/report/context_report.py), fed from this session's events.
        self.ledger = ContextLedger(
            LedgerInputs(
                report=self.context_report,
                budget=lambda: self._loop.context.budget if self._loop is not None else None,
                window=lambda: self._window.window if self._window is not None else 0,
                estimate_now=lambda: self._reports.estimate_now(),
                manual_compaction=lambda: self._turns.manual_compaction,
            ),
            emit=self._emit,
            save_notice=lambda message: self._append(message, emit=True),
        )
        self._summarizer = Summarizer(
            agent,
            provider=lambda: self._provider,
            ladder=lambda: self._loop.context if self._loop is not None else None,
            on_fallback=lambda text: self._append(notice(text, "warning"), emit=True),
            on_usage=self._usage_recorder("summary"),
        )
        # Memory: `memory` turns it on; only a persistent (not ephemeral) run writes.
        self.memory_enabled = memory
        self.reflect_on_close = reflect_on_close
        self._memory = MemoryLink(None, self._memory_inputs())
        self._learning = SessionLearning(
            lambda: self._memory,
            window=lambda: self._window,
            resolve_window=self._resolve_window,
            store=lambda: self.conversation.store,
            manual_compaction=lambda: self._turns.manual_compaction,
            record=lambda: self._loop.context.summarizer_record if self._loop else None,
        )
        self._compactions = CompactionDesk(self.conversation, lambda: self._loop, self._emit)
        # Compaction after an answer, when the next turn would (engine/session/ahead.py).
        self._ahead = CompactionAhead(self._emit) if compact_ahead else None
        # The window, the system prompt and the loop (engine/session/window_desk.py).
        self._desk = WindowDesk(
            agent,
            workspace,
            self.conversation,
            self.ledger,
            provider=lambda: self._provider,
            memory=lambda: self._memory,
            counter=self._ensure_counter,
            setting=self._loop_setting,
            summarizer=self._summarizer,
            learning=self._learning,
            compactions=self._compactions,
            emit=self._emit,
            append=self._append,
        )
        # What /context, /usage, /work, /compaction and the views answer (report_desk.py).
        self._reports = ReportDesk(
            agent,
            workspace,
            self.conversation,
            lambda: self.conversation_id,
            desk=self._desk,
            ledger=self.ledger,
            provider=lambda: self._provider,
            counter=lambda: self._counter,
            memory=lambda: self._memory,
            mcp=self._mcp,
            compactions=self._compactions,
            emit=self._emit,
        )
        # The turn as a task cancel() reaches, and /compact (engine/session/turns.py).
        self._turns = TurnRunner(
            self.conversation,
            self._desk,
            ledger=self.ledger,
            provider=lambda: self._provider,
            memory=lambda: self._memory,
            summarizer=self._summarizer,
            mcp=self._mcp,
            ahead=self._ahead,
            emit=self._emit,
            append=self._append,
        )

    @property
    def conversation_id(self) -> str:
        return self.conversation.id or self._preset_conversation

    @property
    def _conversation_claim(self) -> ConversationClaim | None:
        return self.conversation.claim

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        async with self._admission.starting():
            await self._start()

    async def _start(self) -> None:
        self.conversation.open_store()
        if self.memory_enabled:
            self._memory = MemoryLink.open(
                self.paths,
                self.agent.name,
                self.workspace,
                writes=not self.ephemeral,
                conversation=lambda: self.conversation_id,
                inputs=self._memory_inputs(),
            )
        self._open_conversation()
        if self._provider is None:
            self._provider = provider_for(self.agent, on_load_progress=LoadProgress(self._emit))
        if self._provider.loads_model_in_process:
            self._emit(StateEvent("loading model"))
        await self._resolve_window()
        self._desk.write_system_prompt()  # the engine did not answer: worded as if tools go out
        self.ledger.emit_report()
        self._memory.emit_pending()
        self._emit(StateEvent("ready"))

    async def close(self) -> None:
        self.cancel()
        await self._settle_ahead(stop=True)
        await self._turns.finished()
        await self._mcp.close()  # the conversation's MCP servers end with it
        if self._provider is not None:
            # Closed first: an embedded model's memory is free before a reflection loads one.
            await self._provider.aclose()
        await self._reflect_on_leaving(closing=True)
        self.conversation.close()

    def history(self) -> list[Message]:
        return self.conversation.live()

    @property
    def window(self) -> WindowResolution | None:
        return self._desk.window

    @property
    def _window(self) -> WindowResolution | None:
        return self._desk.window

    @property
    def _loop(self) -> AgentLoop | None:
        return self._desk.loop

    def lower_pin(self, num_ctx: int) -> bool:
        """An ask's choice taken (a spill_choice notice): engine/agent/window.py lowers it."""
        return self._loop is not None and self._loop.watch.lower_pin(num_ctx, chosen=True)

    @property
    def _messages(self) -> list[Message]:
        return self.conversation.messages

    # -- admission and turns (engine/session/turns.py) --------------------------------

    async def send(self, text: str) -> None:
        """A user turn, or the command `text` is (engine/commands.py), announced first (an
        AcceptedEvent); one sent while the model loads waits for it. Never raises."""
        decision = route(text)
        if decision.while_busy:  # a report or a view: answered even while a turn runs
            self._emit(decision.accepted)
            self._reports.answer(decision)
            return
        if self._holding():
            self._emit(busy_refusal(waiting=self._admission.waiting))
            return
        self._emit(decision.accepted)
        withdrawn = WithdrawnEvent(text, decision.accepted.action, decision.accepted.submission)
        async with self._admission.hold(lambda: self._emit(withdrawn)) as started:
            if not started:
                self._emit(ErrorEvent("no_session", "The session did not start.", retryable=True))
                return
            await self._run(decision, text)

    def _holding(self) -> bool:
        return self._admission.held or self._turns.running

    async def _run(self, decision: Route, text: str) -> None:
        if decision.action is Action.COMPACT:
            await self.compact()
            return
        if decision.action is Action.LEARN:
            await self._learning.run()
            return
        if decision.action is Action.RESTORE:
            self._compactions.restore(decision.argument)
            return
        if decision.view == VIEW_NEW_CONVERSATION:
            self._emit(ViewRequestEvent(decision.view))
            await self.open_conversation(None)
            return
        if self._turns.refuse_if_it_cannot_fit(text):
            return
        try:
            await self._settle_ahead()
            self._append(message := user(text))
            self._memory.note_statements(message)
            await self._turns.run()
        except StoreError as exc:  # a full disk: said on the event stream; the session goes on
            store_failure(exc, message, self._messages, decision.accepted, self._emit)
        finally:
            self._memory.emit_pending()
            self._emit(StateEvent("ready"))
        self._turns.start_ahead_if_due()

    async def _settle_ahead(self, *, stop: bool = False) -> None:
        """A compaction running ahead of this turn: waited for (`stop`: stopped first)."""
        await self._turns.settle_ahead(stop=stop)

    def cancel(self) -> None:
        self._turns.cancel()
        self._learning.cancel()

    async def retry(self) -> None:
        """The Retry button: probe the engine again if its window is unknown, then re-run
        the turn that failed (the last message is the user's, unanswered). The user message
        is not added again. Never raises."""
        if self._holding():
            return
        async with self._admission.hold():
            try:
                await self._settle_ahead()
                if self._window is None:
                    if not await self._turns.window_known():
                        return
                    self.ledger.emit_report()
                pending = model_messages(self._messages)
                last = pending[-1] if pending else None
                if last is None or not (last.role == "user" or last.meta_value("partial")):
                    return
                await self._turns.run()
            finally:
                self._emit(StateEvent("ready"))

    async def open_conversation(self, conversation_id: str | None) -> None:
        """Switch to a saved conversation of this agent, or (None) start a new one, keeping
        the engine and its loaded model. Refused while a turn runs."""
        if self._turns.running:
            self._emit(ErrorEvent("busy", "A turn is still running; wait or cancel it first."))
            return
        await self._settle_ahead(stop=True)  # it works on the conversation being left
        await self._reflect_on_leaving()
        previous, self._requested_conversation = self._requested_conversation, conversation_id
        try:
            self._open_conversation()
        except (UnknownConversation, ConversationBusy):
            self._requested_conversation = previous  # still on the conversation it had
            raise
        self.approver.forget()
        await self._desk.switched()  # the prompt, the window told, the loop wired again
        self.ledger.emit_report()
        self._emit(StateEvent("ready"))

    async def compact(self) -> None:
        """`/compact`: compact now through the same path automatic compaction takes."""
        await self._turns.compact()

    # -- the window and the wired loop (engine/session/window_desk.py) -----------------

    def _agent_loop(self) -> AgentLoop:
        return self._desk.agent_loop()

    async def _resolve_window(self) -> None:
        await self._desk.resolve()

    def _ensure_counter(self) -> TokenCounter:
        """The counter the loop and memory count with (made here: tests swap `counter_for`)."""
        if self._counter is None:
            assert self._provider is not None
            self._counter = counter_for(self._provider, self.agent.model)
        return self._counter

    def _loop_setting(self) -> LoopSetting:
        return LoopSetting(
            paths=self.paths,
            workspace=self.workspace,
            ephemeral=self.ephemeral,
            approver=self.approver,
            counter=self._ensure_counter(),
            summarizer_window=self._summarizer.window,
            summarizer_shares_cache=self._summarizer.shares_cache,
            mcp=self._mcp,
        )

    # -- the conversation (engine/session/conversation.py) -----------------------------

    def _open_conversation(self) -> None:
        requested = self._requested_conversation
        # Found and claimed before anything changes: a refusal leaves all as it was.
        found = self.conversation.check_saved(requested) if requested else None
        self.ledger.reset(resumed=bool(requested))
        if found is not None:
            self.conversation.load(found)
            self.ledger.restore_timeline(self.conversation.store, self.conversation_id)
            self._memory.open_saved(self._messages)
            return
        self.conversation.create(self.workspace)
        self._memory.open_new()  # the prompt is written once the tools are known

    def _append(self, message: Message, emit: bool = False) -> None:
        """Persist first, then keep in memory; a notice is told too when `emit`."""
        self.conversation.append(message)
        if emit and message.is_notice:
            self._emit(notice_event(message))

    def _emit(self, event: Event) -> None:
        self.conversation.observe(event)  # the answer draft; `/context show`
        try:
            self._sink(event)
        except Exception:  # a broken listener must not break the turn
            log.exception("event sink failed on %s", event.type)
        self.ledger.observe(event)

    # -- what the rail and /context show (engine/session/report_desk.py) ---------------

    def context_report(self) -> ContextReport:
        """The rail's numbers now: windowless before the loop is wired (this never wires it)."""
        return self._reports.context_report()

    def transcript(self) -> list[Message]:
        """The full record for display, including what compaction replaced."""
        return self.conversation.transcript()

    def turn_receipts(self) -> list[Receipt]:
        """This conversation's turn receipts, oldest first, rounded as turn_end rounds them."""
        return self.conversation.turn_receipts()

    # -- memory (engine/session/memory_link.py) ----------------------------------------

    def _usage_recorder(self, purpose: str) -> Callable[[str, StreamDone], None]:
        store, provider = (lambda: self.conversation.store), (lambda: self._provider)
        conversation = lambda: self.conversation_id  # noqa: E731
        return usage_recorder(store, provider, conversation, agent=self.agent.name, purpose=purpose)

    def _memory_inputs(self) -> MemoryInputs:
        """Memory's calls run on the summarizer model (the agent's when that is not served)."""
        return MemoryInputs(
            reflect_on_close=lambda: self.reflect_on_close,
            emit=self._emit,
            complete=lambda: self._summarizer.completion(self._usage_recorder("memory")),
            counter=self._ensure_counter,
            model_in_process=lambda: bool(self._provider and self._provider.loads_model_in_process),
        )

    async def learn(self) -> None:
        """`/learn` (engine/session/learning.py)."""
        await self._learning.learn()

    async def _reflect_on_leaving(self, *, closing: bool = False) -> None:
        await self._memory.leave(self.conversation_id, self.agent, self.paths, closing=closing)
