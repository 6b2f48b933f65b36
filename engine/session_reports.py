"""What a session shows of itself: the rail's context report, `/context`, `/usage` and `/work`,
the full transcript and receipts a window shows on opening a conversation again, and the
bookkeeping that feeds the rail (the request tracker, the fill warnings, the ladder's saved
rows, the timeline restored from the store).

A mixin of `ChatSession` (engine/session.py) rather than a separate object: every report
reads the session's live state (its messages, window, counter, loop), and keeping these
methods on the session keeps its public API (`context_report()`, `usage_report()`, ...) as
the desktop and the CLI call it. The attributes below are the session state it reads.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.agent import AgentLoop, ToolRunner
from engine.config import AgentConfig
from engine.context import render_work_state
from engine.context.constants import REASON_MANUAL
from engine.context.work_state import work_folder_files
from engine.events import (
    AnswerProgressEvent,
    ClearEvent,
    CompactionEvent,
    ContextEvent,
    ContextReportEvent,
    Event,
    NoticeEvent,
    StateEvent,
    TrimEvent,
    UsageEvent,
    UsageReportEvent,
    WorkStateEvent,
)
from engine.messages import Message, alternating, model_messages, notice
from engine.paths import BrimPaths
from engine.prompt import project_instructions
from engine.providers.base import Provider
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
from engine.tokens import TokenCounter
from engine.window import WindowResolution

log = logging.getLogger(__name__)

# A conversation shows at most this many receipts when it is opened again.
RECEIPTS_SHOWN = 10_000


class SessionReportsMixin:
    """`ChatSession`'s reports and the rail's bookkeeping (mixed into the session)."""

    agent: AgentConfig
    paths: BrimPaths
    workspace: Path | None
    conversation_id: str
    _store: Store | None
    _provider: Provider | None
    _messages: list[Message]
    _window: WindowResolution | None
    _counter: TokenCounter | None
    _loop: AgentLoop | None
    _tools: ToolRunner | None
    _memory_line: str
    _manual_compaction: bool
    _tracker: RequestTracker
    _fill_warnings: FillWarnings
    _compacting_from: int | None
    _compaction_row: str | None
    _last_report: ContextReport | None

    if TYPE_CHECKING:  # the session's own, in engine/session.py

        def history(self) -> list[Message]: ...
        def _agent_loop(self) -> AgentLoop: ...
        def _append(self, message: Message, emit: bool = False) -> None: ...
        def _emit(self, event: Event) -> None: ...

    # -- what the rail, /context, /usage and /work show ---------------------------------

    def context_report(self) -> ContextReport:
        """The rail's numbers now (engine/report.py); cheap: every message count is cached."""
        if self._window is None or self._provider is None:
            return build_context_report(budget=None, source="", estimate=0, tracker=self._tracker)
        loop = self._agent_loop()
        # The loop's own tools: it drops them when the engine refuses them.
        schemas = loop.tools.schemas() if loop.tools is not None else []
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
            estimate=self._next_request_tokens(loop, live, schemas),
            tracker=self._tracker,
            categories=rows,
            instructions=[item.name for item in instructions],
            exact_breakdown=counter.estimate_is_exact,
            counting=f"{self._provider.kind}: {counter.describe()}",
            compact_tools=bool(getattr(loop.tools, "compact", False)),
            exact_estimate=counter.estimate_is_exact,
        )

    def _next_request_tokens(
        self, loop: AgentLoop, live: list[Message], schemas: list[dict[str, object]]
    ) -> int:
        """What the next request costs if sent now: the history with the nudge the ladder
        would add, in the wire form (the summary inside the system message, user turns
        joined), with the tools; counted as the loop counts what it sends."""
        assert self._counter is not None
        request = loop.context.next_request(
            live, overhead_tokens=loop.overhead_tokens(), max_iterations=self.agent.max_iterations
        )
        return self._counter.count_request(alternating(request), schemas)

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

    # -- the rail's bookkeeping (engine/report.py) ---------------------------------------

    def _observe(self, event: Event) -> None:
        """Feed the request tracker; after each landed request, warn at 70% / 90% once and
        send the rail its report. A streaming answer moves the gauge as it grows."""
        if isinstance(event, AnswerProgressEvent):
            self._tracker.on_stream(event.prompt_tokens, event.completion_tokens)
            self._emit_stream_report()
        elif isinstance(event, UsageEvent):
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
        tools = self._loop.tools if self._loop is not None else self._tools
        schemas = tools.schemas() if tools is not None else []
        return self._counter.count_request(model_messages(self._messages), schemas)

    def _emit_report(self) -> None:
        try:
            report = self.context_report()
        except Exception:  # the rail is a view: a failure here must not stop a turn
            log.exception("could not build the context report")
            return
        self._last_report = report
        self._emit(ContextReportEvent(report))

    def _emit_stream_report(self) -> None:
        """The last full report with the streaming figure in it: the breakdown is not
        recounted ten times a second, only the headline moves."""
        base = self._last_report
        if base is None or self._tracker.streaming is None:
            self._emit_report()
            return
        used = sum(self._tracker.streaming)
        self._emit(
            ContextReportEvent(
                replace(base, used=used, estimated=True, describes="next request", streaming=True)
            )
        )

    def _settle_report(self) -> None:
        """A run ended (answered, cancelled or failed): the gauge shows the next request."""
        self._tracker.settle()
        self._emit_report()

    def _work_folder(self) -> Path:
        return self.paths.conversation_dir(self.agent.name, self.conversation_id)
