"""One conversation with one agent: the object the desktop and the headless CLI both drive.

The flow of a turn: user text → persisted first → the agent loop prepares the request,
streams it, runs tools → events → usage lands → calibration and receipts. Everything the
session learns is emitted as typed events (engine/events.py) through one sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from engine.agent import AgentLoop, ToolRunner, TurnOutcome
from engine.commands import (
    VIEW_AGENT_EDITOR,
    VIEW_NEW_CONVERSATION,
    Action,
    route,
    view_fallback_notice,
)
from engine.config import AgentConfig, default_agent
from engine.context import (
    ContextManager,
    Journal,
    LadderOutcome,
    SummaryRequest,
    SummaryResult,
    WorkState,
    journal_preamble,
    render_work_state,
)
from engine.context.constants import FIXED_PREFIX_MAX_RATIO, FIXED_PREFIX_UNWORKABLE_RATIO
from engine.context.history import is_fixed
from engine.conversation_claim import ConversationBusy, ConversationClaim
from engine.events import (
    EngineLoadingEvent,
    ErrorEvent,
    Event,
    LoadProgressEvent,
    NoticeEvent,
    StateEvent,
    ViewRequestEvent,
    WindowEvent,
)
from engine.memory import SessionMemory, standing_block
from engine.messages import Message, alternating, model_messages, notice, system, user
from engine.paths import BrimPaths
from engine.prompt import system_prompt
from engine.providers.base import Provider
from engine.providers.errors import ModelNotFound, ProviderError
from engine.report import ContextReport, FillWarnings, RequestTracker
from engine.session_adapters import AnnouncingApprover, SessionConversation, workspace_tools
from engine.session_budget import output_reserve, pin_advice
from engine.session_engine import probe_window, provider_for, record_summary_usage, summarize
from engine.session_memory import SessionMemoryMixin
from engine.session_reports import SessionReportsMixin
from engine.store import Store
from engine.tokens import TokenCounter, counter_for
from engine.tools import Approver, ConversationApprover, DenyAll, ToolResultStore
from engine.window import WindowResolution

log = logging.getLogger(__name__)

EventSink = Callable[[Event], None]


class ChatSession(SessionReportsMixin, SessionMemoryMixin):
    """One conversation with one agent. All coroutines run on the engine's asyncio loop.

    Its reports and the rail's bookkeeping are in engine/session_reports.py, its memory steps
    in engine/session_memory.py; the state they read is set up here."""

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
        internal: bool = False,
        reflect_on_close: bool = False,
    ) -> None:
        self.agent = agent
        self.paths = paths
        self._sink = sink
        self.conversation_id = conversation_id or ""
        self._requested_conversation = conversation_id
        self.workspace = workspace
        self.ephemeral = ephemeral
        self._provider = provider
        self._store: Store | None = None
        self._messages: list[Message] = []
        self._window: WindowResolution | None = None
        self._counter: TokenCounter | None = None
        self._turn_task: asyncio.Task[TurnOutcome | None] | None = None
        self._learn_task: asyncio.Task[None] | None = None  # /learn, cancelled like a turn
        self._loop: AgentLoop | None = None
        self._tools: ToolRunner | None = None
        # Commands and writes run only on an explicit allow; headless default is deny.
        self.approver = ConversationApprover(AnnouncingApprover(approver or DenyAll(), self._emit))
        # What the context rail shows (engine/report.py), fed from this session's events.
        self._tracker = RequestTracker()
        self._last_report: ContextReport | None = None  # what a streaming update builds on
        self._fill_warnings = FillWarnings()
        self._compacting_from: int | None = None  # context before a running compaction
        self._compaction_row: str | None = None  # replaces the ladder's "Compacted" line
        self._load_reported = -1.0
        # Memory (engine/memory): `memory` turns it on; only a top-level (not `internal`,
        # i.e. not a sub-agent's) run with persistence on (not `ephemeral`) writes any.
        self.memory_enabled = memory
        self.internal = internal
        self.reflect_on_close = reflect_on_close
        self._memory: SessionMemory | None = None
        self._memory_line = ""
        self._had_turn = False  # a turn ran in this conversation in this session
        self._to_reflect: list[str] = []  # left with a turn, not yet reflected on
        self._manual_compaction = False  # /compact does not extract
        # A summarizer_model the engine does not serve: the agent's own model summarizes.
        self._summarizer_fallback = False
        self._summarizer_probed = False
        self._summarizer_window: int | None = None  # the summarizer model's own window
        self._conversation_claim: ConversationClaim | None = None  # no other process writes

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        paths = self.paths.ensure()
        self._store = Store.open(paths.db_path)
        self._open_memory()
        self._open_conversation()
        if self._provider is None:
            self._provider = provider_for(self.agent)
        if self.agent.provider == "embedded":
            self._emit(StateEvent("loading model"))
            if getattr(self._provider, "on_load_progress", False) is None:
                self._provider.on_load_progress = self._load_progress  # type: ignore[attr-defined]
        await self._resolve_window()
        self._emit_report()
        self._emit_pending_memory()
        self._emit(StateEvent("ready"))

    async def close(self) -> None:
        self.cancel()
        if self._turn_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._turn_task
        if self._provider is not None:
            # Closed first: an embedded model's memory is free before a reflection loads one.
            await self._provider.aclose()
        await self._reflect_on_leaving(closing=True)
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._conversation_claim is not None:
            self._conversation_claim.release()
            self._conversation_claim = None

    def history(self) -> list[Message]:
        return list(self._messages)

    @property
    def window(self) -> WindowResolution | None:
        return self._window

    # -- turns -------------------------------------------------------------------------

    async def send(self, text: str) -> None:
        """Run one user turn, or the command `text` is (engine/commands.py routes it).
        Failures become error events; this never raises."""
        decision = route(text)
        command = decision.command.text if decision.command is not None else ""
        if decision.while_busy:  # a report or a view: answered even while a turn runs
            if decision.action is Action.REPORT:
                self.answer_command(command)
            else:
                self._emit(ViewRequestEvent(decision.view))
                # The same words as before for a front end without the view (headless).
                if decision.view != VIEW_AGENT_EDITOR:
                    self._emit_pending_memory(always=True)
                where = str(self.agent.source_path or "the agent's file")
                self._emit(view_fallback_notice(decision.view, where))
            return
        if self._turn_task is not None and not self._turn_task.done():
            self._emit(ErrorEvent("busy", "A turn is still running; wait or cancel it first."))
            return
        if decision.action is Action.COMPACT:
            await self.compact()
            return
        if decision.action is Action.LEARN:
            await self._run_learn()
            return
        if decision.view == VIEW_NEW_CONVERSATION:
            self._emit(ViewRequestEvent(decision.view))
            await self.open_conversation(None)
            return
        if await self._refuse_if_it_cannot_fit(text):
            return
        self._append(user(text))
        self._turn_task = asyncio.create_task(self._run_turn())
        try:
            await self._turn_task
        except asyncio.CancelledError:
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():
                raise
        finally:
            self._turn_task = None
            self._emit_pending_memory()
            self._emit(StateEvent("ready"))

    async def _refuse_if_it_cannot_fit(self, text: str) -> bool:
        """A message that cannot fit the window even alone (with only what every request
        carries: the system prompt, the checkpoint, pinned messages, the tools) is refused
        before anything is compacted, stored or sent: no compaction could make room for it.
        True when refused (an error event with the figures). Checked once the window is
        known (from the second message of a session whose engine was not up at start)."""
        if self._window is None or self._provider is None:
            return False  # the turn resolves it (and says why when it cannot)
        if self._window.source in ("assumed", "fallback"):
            # A guessed window (Ollama before it loads the model) may be far smaller than
            # what the engine serves: the engine's answer decides, not the guess.
            return False
        loop = self._agent_loop()
        assert self._counter is not None
        schemas = loop.tools.schemas() if loop.tools is not None else []
        fixed = [m for m in model_messages(self._messages) if is_fixed(m)]
        message = user(text)
        total = self._counter.count_request(alternating([*fixed, message]), schemas)
        window = loop.context.budget.window
        own = self._counter.count_message(message)
        # Counted exactly, the whole request decides. Estimated (a learned ratio, which can
        # be far off on tool schemas before the first answer), only a message that alone
        # outgrows the window is refused: an ordinary message must never be.
        if total <= window or (not self._counter.estimate_is_exact and own <= window):
            return False
        self._emit(
            ErrorEvent(
                "message_too_large",
                f"This message is about {own:,} tokens; with the system prompt and tools "
                f"({total - own:,} tokens) it needs {total:,}, more than the whole "
                f"{window:,}-token window. Nothing was sent or compacted: shorten it, send "
                "it in parts, or give the agent a file to read instead.",
                data={"tokens": total, "message_tokens": own, "window": window},
            )
        )
        self._emit(StateEvent("ready"))
        return True

    def cancel(self) -> None:
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
        if self._learn_task is not None and not self._learn_task.done():
            self._learn_task.cancel()

    async def retry_window(self) -> None:
        """Probe the engine again (the desktop's Retry button)."""
        await self._resolve_window()

    async def retry(self) -> None:
        """The Retry button: probe the engine again if its window is unknown, then re-run
        the turn that failed (the last message is the user's, unanswered). The user message
        is not added again. Never raises."""
        if self._turn_task is not None and not self._turn_task.done():
            return
        try:
            if self._window is None:
                await self._resolve_window()
                if self._window is None:
                    return
                self._emit_report()
            pending = model_messages(self._messages)
            last = pending[-1] if pending else None
            if last is None or not (last.role == "user" or last.meta_value("partial")):
                return
            self._turn_task = asyncio.create_task(self._run_turn())
            try:
                await self._turn_task
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
        finally:
            self._turn_task = None
            self._emit(StateEvent("ready"))

    async def open_conversation(self, conversation_id: str | None) -> None:
        """Switch to a saved conversation of this agent, or (None) start a new one, keeping
        the engine and its loaded model. Refused while a turn runs."""
        if self._turn_task is not None and not self._turn_task.done():
            self._emit(ErrorEvent("busy", "A turn is still running; wait or cancel it first."))
            return
        await self._reflect_on_leaving()
        previous, self._requested_conversation = self._requested_conversation, conversation_id
        try:
            self._open_conversation()
        except (UnknownConversation, ConversationBusy):
            self._requested_conversation = previous  # still on the conversation it had
            raise
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
        self._emit_report()
        self._emit(StateEvent("ready"))

    # -- internals ---------------------------------------------------------------------

    async def _run_turn(self) -> TurnOutcome | None:
        assert self._provider is not None
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return None
        await self._prepare_summarizer()
        loop = self._agent_loop()
        self._had_turn = True
        if self._memory is not None:
            self._memory.begin_run()  # one snapshot of memory per run
        try:
            return await loop.run_turn()
        except asyncio.CancelledError:
            self._append(notice("Turn cancelled.", "info"), emit=True)
            raise
        finally:
            # The answer (or the cancelled partial) is in the history now and the counter
            # has calibrated on this request: the gauge and the breakdown show what the next
            # request will carry, the same figures `/context` shows.
            self._settle_report()

    def _agent_loop(self) -> AgentLoop:
        assert self._provider is not None and self._window is not None
        if self._counter is None:
            self._counter = counter_for(self._provider, self.agent.model)
        if self._loop is None:
            work = self.paths.conversation_dir(self.agent.name, self.conversation_id)
            journal = None if self.ephemeral else Journal(work / "journal.jsonl")
            state = WorkState(work / "state.json")
            results_dir = self.paths.tool_results_dir(self.agent.name, self.conversation_id)
            # A model that cannot call tools gets none: Ollama refuses the whole request.
            can_call = self._window.tool_calls is not False
            self._tools = workspace_tools(
                self.workspace if can_call else None,
                results_dir=results_dir,
                state=state,
                approver=self.approver,
                compact=self._compact_from_tool,
                memory=self._memory,
                messages=lambda: self._messages,
            )
            self._fit_tool_schemas()
            context = ContextManager(
                window=self._window.window,
                count_message=self._counter.count_message,
                summarize=self._summarize,
                compaction_ratio=self.agent.compaction_ratio,
                reserve_tokens=self.agent.compaction_reserve_tokens,
                store_result=ToolResultStore(results_dir).store,
                journal=journal,
                work_state=lambda: render_work_state(state.read()),
                sink=self._ladder_event,
                before_summarize=self._extract_memory if self._memory_writes else None,
                output_reserve=output_reserve(self.agent, self._provider),
                summarizer_window=self._summarizer_window,
                summarizer_shares_cache=not self._separate_summarizer()
                or self._summarizer_fallback,
            )
            self._loop = AgentLoop(
                agent=self.agent,
                provider=self._memory.wrap(self._provider) if self._memory else self._provider,
                window=self._window,
                counter=self._counter,
                context=context,
                sink=self._emit,
                conversation=SessionConversation(
                    lambda: self._messages, self._append, self._replace
                ),
                store=self._store,
                conversation_id=self.conversation_id,
                tools=self._tools,
                on_window=self._window_learned,
            )
        return self._loop

    def _window_learned(self, resolution: WindowResolution) -> None:
        """The loop learned the engine's real window: the reports and the next loop use it."""
        self._window = resolution

    def _fit_tool_schemas(self) -> None:
        """Decided once per loop, so the schemas stay a stable prefix: where the full tool
        schemas would make the fixed prefix more than 40% of the window, the tools are
        advertised with compact descriptions; where even those leave too little room, the
        user hears what window to pin."""
        assert self._window is not None and self._counter is not None
        runner = self._tools
        if runner is None or not hasattr(runner, "use_compact_schemas"):
            return
        space = self._window.window - output_reserve(self.agent, self._provider)

        def prefix() -> int:
            schemas = runner.schemas()
            system_tokens = sum(
                self._counter.count_message(m)
                for m in model_messages(self._messages)[:1]
                if m.role == "system"
            )
            # Counted as text (a real BPE where the engine counts remotely): JSON runs more
            # tokens per character than the conversation a ratio was learned from.
            tools = self._counter.count_text(json.dumps(schemas, ensure_ascii=False))
            return system_tokens + tools + self._counter.request_overhead(bool(schemas))

        if prefix() <= FIXED_PREFIX_MAX_RATIO * space:
            return
        runner.use_compact_schemas()
        fixed = prefix()
        if fixed <= FIXED_PREFIX_UNWORKABLE_RATIO * space:
            return
        text = pin_advice(fixed, self._window.window, self.agent.provider)
        if not any(m.kind == "notice" and m.content == text for m in self._messages):
            self._append(notice(text, "warning"), emit=True)

    async def _compact_from_tool(self) -> str:
        """The summarize_context tool's answer: what the ladder really did, in figures."""
        assert self._loop is not None
        return describe_outcome(await self._loop.compact_outcome())

    def summarizer_model(self) -> str:
        """The model that writes checkpoints: the agent's summarizer_model while the engine
        serves it, else the agent's own."""
        chosen = self.agent.summarizer_model
        if not chosen or self._summarizer_fallback:
            return self.agent.model
        return chosen

    def _separate_summarizer(self) -> bool:
        return bool(self.agent.summarizer_model) and self.agent.summarizer_model != self.agent.model

    def _fall_back_to_agent_model(self, exc: ProviderError) -> None:
        """Said once: the summarizer model is not served, so the agent's model summarizes
        (seed 000), against the agent's window."""
        if self._summarizer_fallback:
            return
        self._summarizer_fallback = True
        self._summarizer_window = None
        if self._loop is not None:
            self._loop.context.summarizer_window = None
            self._loop.context.summarizer_shares_cache = True
        self._append(
            notice(
                f"The engine does not serve the summarizer model {self.agent.summarizer_model!r} "
                f"({exc.message}); {self.agent.model or 'the agent model'} writes the "
                "checkpoints instead. Fix summarizer_model in the agent to use another.",
                "warning",
            ),
            emit=True,
        )

    async def _prepare_summarizer(self) -> None:
        """Once per session, for a separate summarizer model: ask the engine for its window
        (its prompt budget is its own, not the agent's); an unserved one falls back now."""
        if self._summarizer_probed or not self._separate_summarizer():
            return
        self._summarizer_probed = True
        assert self._provider is not None
        try:
            found = await probe_window(
                self._provider, self.agent.with_changes(model=self.agent.summarizer_model)
            )
        except ModelNotFound as exc:
            self._fall_back_to_agent_model(exc)
            return
        except (ProviderError, ValueError) as exc:
            log.info("could not probe the summarizer's window: %s", exc)
            return
        if found.source != "fallback":
            self._summarizer_window = found.window
            if self._loop is not None:
                self._loop.context.summarizer_window = found.window

    async def _summarize(self, request: SummaryRequest) -> SummaryResult:
        """The summarizer (engine/session_engine.py); summaries count in `/usage`. A
        summarizer model the engine answers 404 for is dropped for the agent's own."""
        assert self._provider is not None
        model = self.summarizer_model()
        try:
            return await self._summarize_with(request, model)
        except ModelNotFound as exc:
            if model == self.agent.model:
                raise
            self._fall_back_to_agent_model(exc)
        return await self._summarize_with(request, self.agent.model)

    async def _summarize_with(self, request: SummaryRequest, model: str) -> SummaryResult:
        assert self._provider is not None
        return await summarize(
            self._provider,
            self.agent,
            request,
            on_done=lambda used, done: record_summary_usage(
                self._store,
                self._provider,
                agent=self.agent.name,
                conversation_id=self.conversation_id,
                model=used,
                done=done,
            ),
            model=model,
        )

    async def compact(self) -> None:
        """`/compact`: compact now through the same path automatic compaction takes."""
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return
        await self._prepare_summarizer()
        loop = self._agent_loop()
        self._manual_compaction = True  # the chat layer cannot answer for the run's gate
        try:
            await loop.compact()
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message, retryable=exc.retryable))
        finally:
            self._manual_compaction = False
            self._emit(StateEvent("ready"))

    async def _resolve_window(self) -> None:
        assert self._provider is not None
        engine = self._provider.kind
        waiting = False

        def on_wait(waited_s: float, limit_s: float) -> None:
            nonlocal waiting
            if not waiting:
                waiting = True
                self._emit(StateEvent("loading model"))
            self._emit(EngineLoadingEvent(engine=engine, waited_s=waited_s, limit_s=limit_s))

        try:
            resolution = await probe_window(self._provider, self.agent, on_wait)
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message, retryable=exc.retryable))
            return
        self._window = resolution
        self._loop = None
        if self._tracker.resumed and not self._tracker.acts_here:
            self._restore_timeline()  # restored before the window was known: draw against it
        self._emit(
            WindowEvent(
                window=resolution.window,
                source=resolution.source,
                warnings=list(resolution.warnings),
                conversation=self.conversation_id,
            )
        )
        for warning in resolution.warnings:
            self._append(notice(warning, "warning"), emit=True)
        self._say_tools_are_unavailable(resolution)

    def _say_tools_are_unavailable(self, resolution: WindowResolution) -> None:
        """A folder was given for the agent to work in, but the model cannot call tools:
        say so once per conversation, before the model pretends it read a file."""
        if self.workspace is None or resolution.tool_calls is not False:
            return
        text = (
            f"{resolution.model} cannot call tools (so its engine reports), so the agent can "
            f"neither read files in {self.workspace} nor run commands. For work on files, pick "
            "a model that calls tools (Qwen2.5 Instruct, for example) in the agent editor."
        )
        if any(m.kind == "notice" and m.content == text for m in self._messages):
            return
        self._append(notice(text, "warning"), emit=True)

    def _claim(self, conversation_id: str) -> None:
        """Hold `conversation_id` against other Brim processes (ConversationBusy if one has
        it), then let go of the conversation this session had open."""
        held = self._conversation_claim
        if held is not None and held.held and held.conversation_id == conversation_id:
            return  # reopening its own conversation: the lock is this session's already
        claim = ConversationClaim.take(self.paths.open_dir, conversation_id)
        if self._conversation_claim is not None:
            self._conversation_claim.release()
        self._conversation_claim = claim

    def _open_conversation(self) -> None:
        assert self._store is not None
        if self._requested_conversation:
            info = self._store.get_conversation(self._requested_conversation)
            if info is None:
                raise UnknownConversation(self._requested_conversation)
            self._claim(info.id)  # before anything changes: a refusal leaves all as it was
        self._tracker.reset()
        self._fill_warnings = FillWarnings()
        self._tracker.resumed = bool(self._requested_conversation)
        if self._requested_conversation:
            self.conversation_id = info.id
            self._messages = self._store.messages(info.id)
            self._restore_timeline()
            self._fold_in_journal()
            if self._memory is not None:
                self._memory.open()  # the snapshot /learn diffs against
                first = self._messages[0] if self._messages else None
                stable = first.content if first is not None and first.role == "system" else ""
                self._memory_line = standing_block(stable)
            return
        self.conversation_id = self._store.create_conversation(
            self.agent.name, workspace=str(self.workspace) if self.workspace else None
        )
        self._claim(self.conversation_id)
        self._messages = []
        workspace = self.workspace.resolve() if self.workspace else None
        if self._memory is not None:
            self._memory_line = self._memory.open()
        self._append(
            system(
                system_prompt(
                    self.agent.system_prompt, workspace=workspace, memory_line=self._memory_line
                )
            )
        )

    def _fold_in_journal(self) -> None:
        """Resuming: what compaction dropped is absent, so the journal comes back as a
        bounded preamble, framed as claims to verify rather than fact."""
        work = self.paths.conversation_dir(self.agent.name, self.conversation_id)
        try:
            entries = Journal(work / "journal.jsonl").read()
        except Exception:
            log.warning("could not read the journal of %s", self.conversation_id, exc_info=True)
            return
        if not entries:
            return
        preamble = journal_preamble(entries)
        # Opened again with no compaction since: the history already carries this preamble,
        # and a second copy would only cost tokens (it stays bounded, as the seed says).
        if preamble and not any(m.content == preamble for m in self._messages):
            # Brim's words, not the user's: not a row in the transcript, never a source of
            # memory, and like compaction's continuation note it goes at the next compaction
            # (whose summary carries what it said).
            self._append(Message(role="user", content=preamble, kind="continuation"))

    def _append(self, message: Message, emit: bool = False) -> None:
        """Persist first, then keep in memory: a crash never loses a committed message."""
        if self._store is not None:
            self._store.append_message(self.conversation_id, message)
        self._messages.append(message)
        if emit and message.is_notice:
            self._emit(
                NoticeEvent(
                    level=message.meta_value("level", "info"),
                    text=message.content,
                    marker=str(message.meta_value("marker", "") or ""),
                )
            )

    def _replace(self, model_history: list[Message]) -> None:
        """The ladder rewrote the history: the store archives the old rows (nothing is
        lost from the full record) and the live conversation becomes the new one."""
        if self._store is not None:
            self._store.replace_messages(self.conversation_id, model_history)
        self._messages = list(model_history)
        self._emit_report()  # the rail shows the rewritten history's estimate at once

    def _emit(self, event: Event) -> None:
        try:
            self._sink(event)
        except Exception:  # a broken listener must not break the turn
            log.exception("event sink failed on %s", event.type)
        self._observe(event)

    def _load_progress(self, fraction: float) -> None:
        """The embedded engine's load callback: at most one event per percent."""
        if fraction >= 1.0 or fraction - self._load_reported >= 0.01:
            self._load_reported = fraction
            self._emit(LoadProgressEvent(round(min(1.0, max(0.0, fraction)), 3)))


def describe_outcome(outcome: LadderOutcome) -> str:
    """The model is told the truth about the compaction it asked for."""
    result = outcome.compaction
    sizes = f"{outcome.tokens_before:,} → {outcome.tokens_after:,} tokens"
    if result is not None and result.ok:
        return (
            f"Compacted {result.messages_before} → {result.messages_after} messages ({sizes}): "
            "the older messages are replaced by the checkpoint in the system message."
        )
    why = "nothing old enough to summarize"
    if result is not None and result.detail:
        why = result.detail
    if outcome.trimmed:
        return (
            f"Not compacted: {why}. {outcome.trimmed} older messages were dropped without a "
            f"summary instead ({sizes})."
        )
    return f"Not compacted: {why}. The context is unchanged ({outcome.tokens_before:,} tokens)."


class UnknownConversation(Exception):
    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation with id {conversation_id!r}")
        self.conversation_id = conversation_id


def open_default_session(sink: EventSink, *, data_dir: Path | None = None) -> ChatSession:
    """The desktop's session on the default agent, with every path under `data_dir`."""
    paths = BrimPaths.resolve(data_dir)
    return ChatSession(replace(default_agent()), paths, sink, memory=True, reflect_on_close=True)
