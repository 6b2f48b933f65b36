"""One conversation with one agent: the object the desktop and the headless CLI both drive.

The flow of a turn: user text → persisted first → the agent loop prepares the request,
streams it, runs tools → events → usage lands → calibration and receipts. Everything the
session learns is emitted as typed events (engine/events.py) through one sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from engine.agent import AgentLoop, ToolRun, ToolRunner, TurnOutcome
from engine.catalog import catalog_window
from engine.commands import parse_command
from engine.config import AgentConfig, default_agent
from engine.context import (
    ContextManager,
    Journal,
    SummaryRequest,
    SummaryResult,
    WorkState,
    journal_preamble,
    render_work_state,
)
from engine.context.compaction import CompactionPlan
from engine.context.constants import REASON_MANUAL
from engine.context.work_state import work_folder_files
from engine.conversation_claim import ConversationBusy, ConversationClaim
from engine.events import (
    ClearEvent,
    CompactionEvent,
    ContextEvent,
    ContextReportEvent,
    ErrorEvent,
    Event,
    LearnProgressEvent,
    LoadProgressEvent,
    MemorySuggestionsEvent,
    NoticeEvent,
    StateEvent,
    TrimEvent,
    UsageEvent,
    UsageReportEvent,
    WindowEvent,
    WorkStateEvent,
)
from engine.memory import (
    Complete,
    MemoryService,
    SessionMemory,
    provider_complete,
    standing_block,
)
from engine.messages import Message, ToolCall, model_messages, notice, system, user
from engine.paths import BrimPaths
from engine.prompt import project_instructions, system_prompt
from engine.providers.base import ChatOptions, EngineReport, Provider, StreamDone, TextDelta
from engine.providers.errors import ProviderError
from engine.providers.registry import make_provider
from engine.report import (
    MARKER_CLEAR,
    MARKER_COMPACTION,
    MARKER_TRIM,
    ContextReport,
    FillWarnings,
    RequestTracker,
    UsageReport,
    build_context_report,
    build_usage_report,
    categories,
    compaction_row,
    saved_marks,
    saved_timeline,
)
from engine.store import Receipt, Store
from engine.tokens import TokenCounter, counter_for
from engine.tools import (
    ApprovalRequest,
    Approver,
    ConversationApprover,
    Decision,
    DenyAll,
    ToolContext,
    ToolRegistry,
    ToolResultStore,
    default_registry,
)
from engine.window import WindowResolution, resolve_window

log = logging.getLogger(__name__)

EventSink = Callable[[Event], None]

# A conversation shows at most this many receipts when it is opened again.
RECEIPTS_SHOWN = 10_000


def provider_for(agent: AgentConfig) -> Provider:
    """Build the provider an agent names (the embedded one gets its model path and pin)."""
    if agent.provider == "embedded":
        return make_provider(
            "embedded",
            model_path=agent.model or None,
            n_ctx=agent.num_ctx,
            n_threads=agent.n_threads,
        )
    if agent.request_timeout_s is not None:
        return make_provider(agent.provider, agent.base_url, timeout=agent.request_timeout_s)
    return make_provider(agent.provider, agent.base_url)


async def probe_window(provider: Provider, agent: AgentConfig) -> WindowResolution:
    """Ask the engine what it serves and resolve the window Brim will account against."""
    report: EngineReport = await provider.report(agent.model, num_ctx=agent.num_ctx)
    return resolve_window(
        report,
        pinned=agent.num_ctx,
        ceiling=agent.max_context_tokens,
        catalog_max=catalog_window(report.model or agent.model),
    )


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
        self.approver = ConversationApprover(_Announcing(approver or DenyAll(), self._emit))
        # What the context rail shows (engine/report.py), fed from this session's events.
        self._tracker = RequestTracker()
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
        """Run one user turn. Failures become error events; this never raises."""
        command = parse_command(text)
        if command is not None and command.text in ("/context", "/usage", "/work"):
            self.answer_command(command.text)  # read-only: answered even while a turn runs
            return
        if self._turn_task is not None and not self._turn_task.done():
            self._emit(ErrorEvent("busy", "A turn is still running; wait or cancel it first."))
            return
        if text.strip() == "/compact":
            await self.compact()
            return
        if command is not None and command.text == "/work clear":
            self.answer_command(command.text)
            return
        if command is not None and command.text == "/new":
            await self.open_conversation(None)
            return
        if command is not None and command.text == "/agent":
            where = self.agent.source_path or "the agent's file"
            self._emit(NoticeEvent("info", f"Edit the agent in Brim's desktop or in {where}."))
            return
        if text.strip() in ("/learn", "/reflect"):
            await self._run_learn()
            return
        if command is not None and command.text in ("/memory", "/memory review"):
            self._emit_pending_memory(always=True)  # a front end without a review dialog
            self._emit(NoticeEvent("info", "Review memory with `brim memory review`."))
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

    # -- what the rail, /context, /usage and /work show ---------------------------------

    def context_report(self) -> ContextReport:
        """The rail's numbers now (engine/report.py); cheap: every message count is cached."""
        if self._window is None or self._provider is None:
            return build_context_report(budget=None, source="", estimate=0, tracker=self._tracker)
        loop = self._agent_loop()
        schemas = self._tools.schemas() if self._tools is not None else []
        counter = self._counter
        assert counter is not None
        live = model_messages(self._messages)
        workspace = self.workspace.resolve() if self.workspace else None
        instructions = project_instructions(workspace)
        rows = categories(
            live,
            count_message=counter.count_message,
            count_text=counter.count_text,
            schema_tokens=counter.count_tools(schemas),
            framing_tokens=counter.request_overhead(bool(schemas)),
            instructions=instructions,
            memory_texts=[self._memory_line] if self._memory_line else [],
        )
        return build_context_report(
            budget=loop.context.budget,
            source=self._window.source,
            estimate=counter.count_request(live, schemas),
            tracker=self._tracker,
            categories=rows,
            instructions=[item.name for item in instructions],
            exact_breakdown=counter.estimate_is_exact,
        )

    def usage_report(self) -> UsageReport:
        """`/usage` for this conversation: every request it made, summaries included."""
        if self._store is None or not self.conversation_id:
            return build_usage_report([])
        return build_usage_report(self._store.usage_summary(self.conversation_id))

    def work_state_text(self) -> str:
        """`/work`: the agent's work state for this conversation, as text ("" when none)."""
        _, state = work_folder_files(self._work_folder())
        try:
            return render_work_state(state.read())
        except Exception as exc:  # a hand-edited, broken state.json: say so, do not fail
            return f"The work state could not be read: {exc}"

    def clear_work_state(self) -> None:
        """`/work clear`: forget the work state (the journal of compactions stays)."""
        _, state = work_folder_files(self._work_folder())
        state.clear()

    def answer_command(self, command: str) -> None:
        """Run a read-only slash command (or `/work clear`) and emit its answer."""
        if command == "/context":
            self._emit(ContextReportEvent(self.context_report(), snapshot=True))
        elif command == "/usage":
            self._emit(UsageReportEvent(self.usage_report()))
        elif command == "/work":
            self._emit(WorkStateEvent(self.work_state_text()))
        elif command == "/work clear":
            self.clear_work_state()
            self._emit(WorkStateEvent("", cleared=True))

    def transcript(self) -> list[Message]:
        """The full record for display: every message ever stored in this conversation,
        including what compaction replaced and the notices the ladder wrote."""
        if self._store is None or not self.conversation_id:
            return self.history()
        try:
            return self._store.messages(self.conversation_id, include_archived=True)
        except Exception:
            log.warning("could not read the full record of %s", self.conversation_id)
            return self.history()

    def turn_receipts(self) -> list[Receipt]:
        """This conversation's turn receipts, oldest first, for a window showing it again.

        The figures are rounded as the live turn_end event rounds them, so a receipt reads
        the same under its answer live and after the conversation is opened again."""
        if self._store is None or not self.conversation_id:
            return []
        try:
            saved = self._store.receipts(self.conversation_id, limit=RECEIPTS_SHOWN)
        except Exception:
            log.warning("could not read the receipts of %s", self.conversation_id)
            return []
        return [
            replace(r, elapsed_s=round(r.elapsed_s, 3), tokens_per_s=round(r.tokens_per_s, 2))
            for r in saved
        ]

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
        self._emit_report()
        self._emit(StateEvent("ready"))

    # -- internals ---------------------------------------------------------------------

    async def _run_turn(self) -> TurnOutcome | None:
        assert self._provider is not None
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return None
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
            # The answer is in the history now and the counter has calibrated on this
            # request: the rail's breakdown shows what the next request will carry, the
            # same figures `/context` shows.
            self._emit_report()

    def _agent_loop(self) -> AgentLoop:
        assert self._provider is not None and self._window is not None
        if self._counter is None:
            self._counter = counter_for(self._provider, self.agent.model)
        if self._loop is None:
            work = self.paths.conversation_dir(self.agent.name, self.conversation_id)
            journal = None if self.ephemeral else Journal(work / "journal.jsonl")
            state = WorkState(work / "state.json")
            results_dir = self.paths.tool_results_dir(self.agent.name, self.conversation_id)
            self._tools = self._tool_runner(results_dir, state)
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
            )
            self._loop = AgentLoop(
                agent=self.agent,
                provider=self._memory.wrap(self._provider) if self._memory else self._provider,
                window=self._window,
                counter=self._counter,
                context=context,
                sink=self._emit,
                conversation=_SessionConversation(self),
                store=self._store,
                conversation_id=self.conversation_id,
                tools=self._tools,
            )
        return self._loop

    def _tool_runner(self, results_dir: Path, state: WorkState) -> ToolRunner | None:
        """Tools need a workspace to stay inside; without one the agent only chats."""
        if self.workspace is None:
            return None
        ctx = ToolContext(
            workspace=self.workspace.resolve(),
            tool_results_dir=results_dir,
            work_state=state,
            approver=self.approver,
            compact=self._compact_from_tool,
        )
        registry = default_registry()
        if self._memory is not None:
            for tool in self._memory.tools(lambda: model_messages(self._messages)):
                registry.register(tool)
        return RegistryRunner(registry, ctx)

    async def _compact_from_tool(self) -> str:
        assert self._loop is not None
        ok = await self._loop.compact()
        return "Context compacted." if ok else "Nothing was compacted (nothing old enough)."

    async def _summarize(self, request: SummaryRequest) -> SummaryResult:
        """The summarizer: the agent's summarizer model on the same engine, else its own."""
        assert self._provider is not None
        model = self.agent.summarizer_model or self.agent.model
        parts: list[str] = []
        finish: str | None = None
        options = ChatOptions(
            max_tokens=request.max_tokens,
            temperature=0.2,
            num_ctx=self.agent.num_ctx if self._provider.kind == "ollama" else None,
            stop=list(request.stop),
        )
        async for item in self._provider.stream_chat(model, request.messages, options):
            if isinstance(item, TextDelta):
                parts.append(item.text)
            elif isinstance(item, StreamDone):
                finish = item.finish_reason
                self._record_summary_usage(model, item)
        return SummaryResult("".join(parts), finish)

    def _record_summary_usage(self, model: str, done: StreamDone) -> None:
        """Summaries cost requests too; `/usage` counts them (purpose "summary")."""
        if self._store is None or self._provider is None:
            return
        try:
            self._store.record_usage(
                self.conversation_id,
                agent=self.agent.name,
                provider=self._provider.kind,
                model=model or "default",
                prompt_tokens=done.usage.prompt_tokens,
                completion_tokens=done.usage.completion_tokens,
                cached_tokens=done.usage.cached_tokens,
                purpose="summary",
            )
        except Exception:
            log.exception("could not record the summary's usage")

    async def compact(self) -> None:
        """`/compact`: compact now through the same path automatic compaction takes."""
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return
        loop = self._agent_loop()
        self._manual_compaction = True  # the chat layer cannot answer for the run's gate
        try:
            await loop.compact()
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message))
        finally:
            self._manual_compaction = False
            self._emit(StateEvent("ready"))

    async def _resolve_window(self) -> None:
        assert self._provider is not None
        try:
            resolution = await probe_window(self._provider, self.agent)
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message))
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

    def _claim(self, conversation_id: str) -> None:
        """Hold `conversation_id` against other Brim processes (ConversationBusy if one has
        it), then let go of the conversation this session had open."""
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

    def _restore_timeline(self) -> None:
        """The rail's timeline covers the whole conversation, not only this process's part:
        seed the tracker from the stored chat requests and the ladder's saved acts."""
        if self._store is None or not self.conversation_id:
            return
        try:
            requests = self._store.usage_records(self.conversation_id, purpose="chat")
            marks = saved_marks(self._store.records(self.conversation_id))
        except Exception:
            log.warning("could not read the timeline of %s", self.conversation_id)
            return
        window = self._window.window if self._window is not None else 0
        points, markers = saved_timeline(requests, marks, window)
        self._tracker.restore(points, markers, len(requests))

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

    # -- the rail's bookkeeping (engine/report.py) ---------------------------------------

    def _observe(self, event: Event) -> None:
        """Feed the request tracker; after each landed request, warn at 70% / 90% once and
        send the rail its report."""
        if isinstance(event, UsageEvent):
            self._tracker.on_usage(event.prompt_tokens, event.cached_tokens)
        elif isinstance(event, ContextEvent):
            self._tracker.on_context(event.used, event.window, estimated=event.estimated)
            budget = self._loop.context.budget if self._loop is not None else None
            warning = self._fill_warnings.check(event.used, budget) if budget else None
            if warning:
                self._append(notice(warning, "warning"), emit=True)
            self._emit_report()
        elif isinstance(event, ClearEvent):
            self._tracker.on_marker(MARKER_CLEAR, f"{event.results_cleared} tool results")
        elif isinstance(event, TrimEvent):
            self._tracker.on_marker(MARKER_TRIM, f"{event.messages_dropped} messages")
        elif isinstance(event, CompactionEvent) and event.phase == "finished":
            detail = f"{event.messages_before} -> {event.messages_after} messages"
            self._tracker.on_marker(MARKER_COMPACTION, detail)

    def _ladder_event(self, event: Event) -> None:
        """The context manager's events. Its notices are saved in the conversation (they
        are part of what happened); a finished compaction is told as seed 003's two lines
        saved in place of the ladder's own. The ladder's lines (seed 000: "auto-compacting…",
        "Compacted 64 → 12 messages") still go out, marked transient: headless output shows
        them, a window leaves them to its state (`compacting`) and the saved row."""
        if isinstance(event, CompactionEvent):
            if event.phase == "started":
                self._compacting_from = self._estimate_now()
            elif event.phase == "finished":
                window = self._window.window if self._window else 0
                self._compaction_row = compaction_row(
                    event.messages_before,
                    event.messages_after,
                    self._compacting_from or 0,
                    self._loop.context.budget.window if self._loop else window,
                    event.reason,
                    asked_by_agent=event.reason == REASON_MANUAL and not self._manual_compaction,
                )
            else:
                self._compaction_row = None
            self._emit(event)
            if event.phase == "started":  # the header says so while the summary is written
                self._emit(StateEvent("compacting"))
            return
        if isinstance(event, NoticeEvent):
            if event.text.endswith("auto-compacting…"):
                self._emit(replace(event, transient=True))
                return
            marker = None
            if self._compaction_row is not None and event.level == "info":
                self._emit(replace(event, transient=True))
                text, self._compaction_row, marker = self._compaction_row, None, MARKER_COMPACTION
            else:
                text = event.text
                if "without a summary" in text:
                    marker = MARKER_TRIM
            message = notice(text, event.level)
            if marker:
                message = message.with_meta(marker=marker)
            self._append(message, emit=True)
            return
        self._emit(event)

    def _estimate_now(self) -> int:
        if self._counter is None:
            return 0
        schemas = self._tools.schemas() if self._tools is not None else []
        return self._counter.count_request(model_messages(self._messages), schemas)

    def _emit_report(self) -> None:
        try:
            report = self.context_report()
        except Exception:  # the rail is a view: a failure here must not stop a turn
            log.exception("could not build the context report")
            return
        self._emit(ContextReportEvent(report))

    def _load_progress(self, fraction: float) -> None:
        """The embedded engine's load callback: at most one event per percent."""
        if fraction >= 1.0 or fraction - self._load_reported >= 0.01:
            self._load_reported = fraction
            self._emit(LoadProgressEvent(round(min(1.0, max(0.0, fraction)), 3)))

    def _work_folder(self) -> Path:
        return self.paths.conversation_dir(self.agent.name, self.conversation_id)

    # -- memory (engine/memory) -----------------------------------------------------------

    @property
    def _memory_writes(self) -> bool:
        """The gate, computed here at the call site: a top-level, persistent run only."""
        return self._memory is not None and self._memory.writes

    def _open_memory(self) -> None:
        if not self.memory_enabled:
            return
        self._memory = SessionMemory(
            MemoryService.for_paths(self.paths),
            agent=self.agent.name,
            workspace=self.workspace,
            writes=not (self.ephemeral or self.internal),
            conversation=lambda: self.conversation_id,
        )

    def _memory_complete(self) -> Complete:
        assert self._provider is not None
        model = self.agent.summarizer_model or self.agent.model
        return provider_complete(self._provider, model, num_ctx=self.agent.num_ctx)

    def _count_text(self, text: str) -> int:
        if self._counter is None:
            assert self._provider is not None
            self._counter = counter_for(self._provider, self.agent.model)
        return self._counter.count_message(user(text))

    async def _extract_memory(self, plan: CompactionPlan) -> None:
        """The compaction hook: suggest durable facts from the messages about to go."""
        if self._memory is None or self._manual_compaction or self._window is None:
            return
        self._emit(StateEvent("suggesting memories"))
        await self._memory.extract(
            plan,
            complete=self._memory_complete(),
            count_text=self._count_text,
            window=self._window.window,
        )
        self._emit(StateEvent("compacting"))

    def _emit_pending_memory(self, always: bool = False) -> None:
        if self._memory is None:
            return
        pending = self._memory.pending()
        if pending or always:
            self._emit(MemorySuggestionsEvent(pending=pending))

    async def _run_learn(self) -> None:
        """`/learn` as a task `cancel()` reaches (Esc, the desktop's Cancel)."""
        self._learn_task = asyncio.create_task(self.learn())
        try:
            await self._learn_task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        finally:
            self._learn_task = None

    async def learn(self) -> None:
        """`/learn` (alias `/reflect`): scan what this conversation said since the last
        reflection, one curation call, then tell how many suggestions wait. Never raises."""
        if self._memory is None or not self._memory.writes or self._store is None:
            self._emit(NoticeEvent("info", "Memory is off for this conversation."))
            return
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return
        self._emit(StateEvent("learning"))
        try:
            report = await self._memory.learn(
                self._store,
                complete=self._memory_complete(),
                count_text=self._count_text,
                window=self._window.window,
                progress=lambda step, steps, text: self._emit(
                    LearnProgressEvent(step, steps, text)
                ),
            )
        except Exception as exc:
            log.warning("memory: learn failed", exc_info=True)
            self._emit(ErrorEvent("memory", f"Learning failed; nothing was claimed: {exc}"))
        except asyncio.CancelledError:
            self._emit(NoticeEvent("info", "Learning cancelled; /learn again picks it up."))
            raise
        else:
            queued = len(report.queued) if report is not None else 0
            self._emit(NoticeEvent("info", f"Learn: {queued} new suggestions for review."))
        finally:
            self._emit_pending_memory(always=True)
            self._emit(StateEvent("ready"))

    async def _reflect_on_leaving(self, *, closing: bool = False) -> None:
        """Closing or leaving a conversation that had a turn: a detached reflection.

        On the embedded engine a reflection loads its own copy of the model; beside the
        one this session holds that can be more memory (or GPU memory) than the machine
        has. So there, leaving a conversation only notes it, and closing starts one
        reflection over every conversation noted, which loads the model once."""
        if not (self.reflect_on_close and self._memory_writes):
            return
        if self._had_turn:
            self._had_turn = False
            if self.conversation_id not in self._to_reflect:
                self._to_reflect.append(self.conversation_id)
        if not self._to_reflect or (self.agent.provider == "embedded" and not closing):
            return
        conversations, self._to_reflect = self._to_reflect, []
        assert self._memory is not None
        agent = self.agent
        await asyncio.to_thread(
            self._memory.spawn_reflection,
            data_dir=self.paths.root if self.paths.overridden else None,
            provider=agent.provider,
            base_url=agent.base_url,
            model=agent.model,
            summarizer_model=agent.summarizer_model,
            num_ctx=agent.num_ctx,
            conversations=conversations,
        )


class _Announcing:
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

    def __init__(self, registry: ToolRegistry, ctx: ToolContext) -> None:
        self.registry = registry
        self.ctx = ctx
        self._schemas = registry.schemas()

    def schemas(self) -> list[dict[str, object]]:
        return self._schemas

    async def run(self, call: ToolCall) -> ToolRun:
        outcome = await self.registry.call(call.name, call.arguments, self.ctx, call_id=call.id)
        return ToolRun(outcome.content, outcome.chars, outcome.truncated, outcome.is_error)


class _SessionConversation:
    """The loop's view of the session's conversation."""

    def __init__(self, session: ChatSession) -> None:
        self._session = session

    def live(self) -> list[Message]:
        return list(self._session._messages)

    def append(self, message: Message) -> None:
        self._session._append(message)

    def replace(self, model_history: list[Message]) -> None:
        self._session._replace(model_history)


class UnknownConversation(Exception):
    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation with id {conversation_id!r}")
        self.conversation_id = conversation_id


def open_default_session(sink: EventSink, *, data_dir: Path | None = None) -> ChatSession:
    """The desktop's session on the default agent, with every path under `data_dir`."""
    paths = BrimPaths.resolve(data_dir)
    return ChatSession(replace(default_agent()), paths, sink, memory=True, reflect_on_close=True)
