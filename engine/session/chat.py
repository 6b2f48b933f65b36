"""One conversation with one agent: the object the desktop and the headless CLI both drive.

The flow of a turn: user text → persisted first → the agent loop prepares the request,
streams it, runs tools → events → usage lands → calibration and receipts. Everything the
session learns is emitted as typed events (engine/events.py) through one sink.

`ChatSession` is the facade over objects with one job each (engine/session/*.py): the
`Conversation` (messages, their persistence), the `ContextLedger` (the rail's bookkeeping),
the `Summarizer`, `wire_agent_loop` and the `MemoryLink`. It routes commands, resolves the
window, and wires the loop when the window or conversation changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

import engine.session.reports as reports
import engine.session.tools_offer as offer
from engine.agent.loop import AgentLoop, TurnOutcome
from engine.commands import VIEW_AGENT_EDITOR, VIEW_NEW_CONVERSATION, Action, Route, route
from engine.config import AgentConfig
from engine.conversation_claim import ConversationBusy, ConversationClaim
from engine.events import (
    ErrorEvent,
    Event,
    EventSink,
    StateEvent,
    ViewRequestEvent,
    WindowEvent,
    WithdrawnEvent,
)
from engine.mcp.hub import McpHub
from engine.messages import Message, model_messages, notice, user
from engine.paths import BrimPaths
from engine.providers.base import Provider, StreamDone
from engine.providers.errors import ProviderError
from engine.report.context_report import ContextReport
from engine.session.adapters import AnnouncingApprover, RegistryRunner, view_fallback_notice
from engine.session.admission import Admission, await_quietly_cancelled, busy_refusal
from engine.session.ahead import CompactionAhead
from engine.session.budget import fold_in_journal, oversized_for_loop
from engine.session.conversation import Conversation
from engine.session.engine_calls import (
    LoadProgress,
    probe_window_telling,
    provider_for,
    start_notices,
    usage_recorder,
)
from engine.session.learning import SessionLearning
from engine.session.ledger import ContextLedger, LedgerInputs, keeping_notices, notice_event
from engine.session.memory_link import MemoryInputs, MemoryLink
from engine.session.outcome import describe_outcome
from engine.session.restoring import CompactionDesk
from engine.session.store_failure import store_failure
from engine.session.summarizer import Summarizer
from engine.session.wiring import LoopHooks, LoopSetting, decide_tool_schemas, wire_agent_loop
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
        self._window: WindowResolution | None = None
        self._counter: TokenCounter | None = None
        self._turn_task: asyncio.Task[TurnOutcome | None] | None = None
        self._admission = Admission()  # one submission at a time; waits for the start
        self._loop: AgentLoop | None = None
        self._tools: RegistryRunner | None = None
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
                estimate_now=self._estimate_now,
                manual_compaction=lambda: self._manual_compaction,
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
        self._manual_compaction = False  # /compact does not extract
        self._learning = SessionLearning(
            lambda: self._memory,
            window=lambda: self._window,
            resolve_window=self._resolve_window,
            store=lambda: self.conversation.store,
            manual_compaction=lambda: self._manual_compaction,
        )
        self._compactions = CompactionDesk(self.conversation, lambda: self._loop, self._emit)
        # Compaction after an answer, when the next turn would (engine/session/ahead.py).
        self._ahead = CompactionAhead(self._emit) if compact_ahead else None

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
        self._write_system_prompt()  # the engine did not answer: worded as if tools go out
        self.ledger.emit_report()
        self._memory.emit_pending()
        self._emit(StateEvent("ready"))

    async def close(self) -> None:
        self.cancel()
        await self._settle_ahead(stop=True)
        if self._turn_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._turn_task
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
        return self._window

    def lower_pin(self, num_ctx: int) -> bool:
        """An ask's choice taken (a spill_choice notice): engine/agent/window.py lowers it."""
        return self._loop is not None and self._loop.watch.lower_pin(num_ctx, chosen=True)

    @property
    def _messages(self) -> list[Message]:
        return self.conversation.messages

    # -- turns -------------------------------------------------------------------------

    async def send(self, text: str) -> None:
        """A user turn, or the command `text` is (engine/commands.py), announced first (an
        AcceptedEvent); one sent while the model loads waits for it. Never raises."""
        decision = route(text)
        if decision.while_busy:  # a report or a view: answered even while a turn runs
            self._emit(decision.accepted)
            if decision.action is Action.REPORT and decision.command is not None:
                self._answer_command(decision.command.text, decision.argument)
            else:
                self._emit(ViewRequestEvent(decision.view))  # and words for the headless
                if decision.view != VIEW_AGENT_EDITOR:
                    self._memory.emit_pending(always=True)
                where = str(self.agent.source_path or "the agent's file")
                self._emit(view_fallback_notice(decision.view, where))
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
        return self._admission.held or bool(self._turn_task and not self._turn_task.done())

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
        if await self._refuse_if_it_cannot_fit(text):
            return
        try:
            await self._settle_ahead()
            self._append(message := user(text))
            self._memory.note_statements(message)
            await self._await_turn()
        except StoreError as exc:  # a full disk: said on the event stream; the session goes on
            store_failure(exc, message, self._messages, decision.accepted, self._emit)
        finally:
            self._memory.emit_pending()
            self._emit(StateEvent("ready"))
        if self._ahead is not None:
            self._ahead.start_if_due(self._loop)

    async def _settle_ahead(self, *, stop: bool = False) -> None:
        """A compaction running ahead of this turn: waited for (`stop`: stopped first)."""
        if self._ahead is not None:
            await (self._ahead.stop() if stop else self._ahead.settle())

    async def _await_turn(self) -> None:
        """Run the turn as a task that `cancel()` reaches; a cancel ends it quietly."""
        self._turn_task = asyncio.create_task(self._run_turn())
        try:
            await await_quietly_cancelled(self._turn_task)
        finally:
            self._turn_task = None

    async def _refuse_if_it_cannot_fit(self, text: str) -> bool:
        """A message that cannot fit the window even alone is refused (an error event, True)
        before anything is compacted, stored or sent, once the window is the engine's."""
        if self._window is None or self._provider is None:
            return False  # the turn resolves it (and says why when it cannot)
        if self._window.source in ("assumed", "fallback", "observed"):
            # A guessed window (Ollama before it loads the model), or one drawn from a single
            # error, may be far smaller than what the engine serves: its answer decides.
            return False
        refusal = oversized_for_loop(text, self._messages, self._agent_loop())
        if refusal is not None:
            self._emit(refusal)
            self._emit(StateEvent("ready"))
        return refusal is not None

    def cancel(self) -> None:
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
        self._learning.cancel()
        if self._ahead is not None:
            self._ahead.cancel()

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
                    await self._resolve_window()
                    if self._window is None:
                        return
                    self.ledger.emit_report()
                pending = model_messages(self._messages)
                last = pending[-1] if pending else None
                if last is None or not (last.role == "user" or last.meta_value("partial")):
                    return
                await self._await_turn()
            finally:
                self._emit(StateEvent("ready"))

    async def open_conversation(self, conversation_id: str | None) -> None:
        """Switch to a saved conversation of this agent, or (None) start a new one, keeping
        the engine and its loaded model. Refused while a turn runs."""
        if self._turn_task is not None and not self._turn_task.done():
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
        self._write_system_prompt()
        self._loop = None
        self.approver.forget()
        if self._window is not None:
            self._emit(
                WindowEvent(
                    window=self._window.window,
                    source=self._window.source,
                    warnings=[],
                    conversation=self.conversation_id,
                )
            )
            self._say_tools_are_unavailable(self._window)
            self._rewire()
            await self._fold_in_journal()
        self.ledger.emit_report()
        self._emit(StateEvent("ready"))

    async def compact(self) -> None:
        """`/compact`: compact now through the same path automatic compaction takes."""
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return
        await self._settle_ahead()
        await self._summarizer.prepare()
        loop = self._agent_loop()
        self._manual_compaction = True  # the chat layer cannot answer for the run's gate
        try:
            await loop.compact()
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message, retryable=exc.retryable))
        finally:
            self._manual_compaction = False
            self._emit(StateEvent("ready"))

    # -- the turn and its loop ---------------------------------------------------------

    async def _run_turn(self) -> TurnOutcome | None:
        assert self._provider is not None
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return None
        await self._summarizer.prepare()
        if await self._mcp.prepare():  # MCP listings known, eager servers chosen
            self._loop = None  # wired again, with the tools of the servers that go eager
        loop = self._agent_loop()
        self._memory.begin_run()  # one snapshot of memory per run
        try:
            return await loop.run_turn()
        except asyncio.CancelledError:
            self._append(notice("Turn cancelled.", "info"), emit=True)
            raise
        finally:
            self.ledger.settle()  # the answer (or its partial) is in: the gauge shows the next

    def _agent_loop(self) -> AgentLoop:
        """The wired loop (wired when the window became known or the conversation changed)."""
        if self._loop is None:
            self._rewire()
        assert self._loop is not None
        return self._loop

    def _rewire(self) -> None:
        """Wire the agent loop for the conversation and window as they are now."""
        assert self._provider is not None and self._window is not None
        wired = wire_agent_loop(
            self.agent,
            self._provider,
            self._window,
            self.conversation,
            self._memory.memory,
            setting=LoopSetting(
                paths=self.paths,
                workspace=self.workspace,
                ephemeral=self.ephemeral,
                approver=self.approver,
                counter=self._ensure_counter(),
                summarizer_window=self._summarizer.window,
                summarizer_shares_cache=self._summarizer.shares_cache,
                mcp=self._mcp,
            ),
            hooks=LoopHooks(
                sink=self._emit,
                ladder_sink=self.ledger.on_ladder_event,
                summarize=self._summarizer.summarize,
                compact_tool=self._compact_from_tool,
                before_summarize=self._learning.extract if self._memory.writes else None,
                on_window=self._window_learned,
            ),
        )
        self._tools = wired.tools
        self._advise(wired.pin_advice)
        self._loop = wired.loop
        self._compactions.shape(wired.loop)

    def _ensure_counter(self) -> TokenCounter:
        if self._counter is None:
            assert self._provider is not None
            self._counter = counter_for(self._provider, self.agent.model)
        return self._counter

    def _advise(self, advice: str | None) -> None:
        if advice and not self.conversation.has_notice(advice):
            self._append(notice(advice, "warning"), emit=True)

    def _window_learned(self, resolution: WindowResolution) -> None:
        self._window = resolution  # the engine's real window: reports and next loop use it
        if self._loop is not None and self._provider is not None:  # the tools, decided again
            found = (self._ensure_counter(), resolution, self.conversation.messages)
            self._advise(decide_tool_schemas(self._tools, self.agent, self._provider, *found))

    async def _compact_from_tool(self) -> str:
        """The summarize_context tool's answer: what the ladder really did, in figures."""
        assert self._loop is not None
        return describe_outcome(await self._loop.compact_outcome())

    # -- the window --------------------------------------------------------------------

    async def _resolve_window(self) -> None:
        assert self._provider is not None
        resolution = await probe_window_telling(self._provider, self.agent, self._emit, load=True)
        if resolution is None:
            return
        self._window = resolution
        self._write_system_prompt()
        self._loop = None
        if self.ledger.needs_window:
            # Restored before the window was known: draw it against the window.
            self.ledger.restore_timeline(self.conversation.store, self.conversation_id)
        self._emit(
            WindowEvent(
                window=resolution.window,
                source=resolution.source,
                warnings=list(resolution.warnings),
                conversation=self.conversation_id,
            )
        )
        # Said once (the window event, or a notice with data); kept for when it is reopened.
        for message, told in start_notices(resolution, self.conversation.has_notice):
            self._append(message, emit=told)
        self._say_tools_are_unavailable(resolution)
        self._rewire()
        await self._fold_in_journal()

    async def _fold_in_journal(self) -> None:
        """A resumed conversation's journal, sized from the window and the history it joins."""
        if (loop := self._loop) is not None:
            await fold_in_journal(loop, self.conversation, self._ensure_counter().count_text)

    def _say_tools_are_unavailable(self, resolution: WindowResolution) -> None:
        """Tools given but withheld (session/tools_offer.py): said once per conversation."""
        if text := offer.tools_withheld(self.agent, self.workspace, resolution, self.conversation):
            self._append(text, emit=True)

    def _write_system_prompt(self) -> None:
        """A new conversation's system message, or a saved one's changed stable prompt."""
        parts = offer.prompt_parts(self.agent, self.workspace, self._memory.line)
        if message := offer.system_message_due(self._messages, parts, self._window):
            self._append(message)

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

    # -- what the rail, /context, /usage and /work show (engine/session/reports.py) -----

    def context_report(self) -> ContextReport:
        """The rail's numbers now: windowless before the loop is wired (this never wires it)."""
        return reports.context_report(
            loop=self._loop,
            counter=self._counter,
            messages=self._messages,
            tracker=self.ledger.tracker,
            source=self._window.source if self._window is not None else "",
            provider=self._provider,
            workspace=self.workspace,
            memory_line=self._memory.line,
            max_iterations=self.agent.max_iterations,
            mcp=self._mcp,
            sampling=self.agent.sampling,
        )

    def _answer_command(self, command: str, argument: str = "") -> None:
        """`/context`, `/usage`, `/work` answered with their report; `/work clear` forgets
        the work state and the journal of compactions first; `/compaction` (`show N`)."""
        if command == "/compaction":
            self._compactions.answer(argument)
            return
        folder = self.conversation.work_folder()
        if command == "/work clear":
            reports.clear_work_state(folder)
        answer = reports.command_answer(
            command,
            self.context_report,
            lambda: reports.usage_report(self.conversation.store, self.conversation_id),
            lambda: (reports.work_state_text(folder), self._tools is not None),
        )
        if answer is not None:
            self._emit(answer)

    def transcript(self) -> list[Message]:
        """The full record for display, including what compaction replaced."""
        return self.conversation.transcript()

    def turn_receipts(self) -> list[Receipt]:
        """This conversation's turn receipts, oldest first, rounded as turn_end rounds them."""
        return self.conversation.turn_receipts()

    def _estimate_now(self) -> int:
        tools = self._loop.tools if self._loop is not None else self._tools
        return reports.history_tokens(self._counter, self._messages, tools)

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
