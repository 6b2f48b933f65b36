"""A scripted stand-in for `engine.session.ChatSession`, for driving the desktop without a model.

It implements the whole `engine.api.SessionControl` protocol the desktop drives (a test
checks it member by member against the protocol and ChatSession) and keeps the real
session's contract: every method runs on the engine's asyncio loop (it records which thread
it ran on, so a test can prove the bridge never calls it from Qt), events go through the
sink it was given, `send` follows the engine's command router and never raises, and `cancel`
is safe at any time.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from engine.commands import VIEW_NEW_CONVERSATION, Action, Route, route
from engine.config import AgentConfig, default_agent
from engine.context.budget import ContextBudget
from engine.events import (
    CompactionEvent,
    ContextEvent,
    ContextReportEvent,
    DeltaEvent,
    ErrorEvent,
    EventSink,
    LoadProgressEvent,
    NoticeEvent,
    StateEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageEvent,
    UsageReportEvent,
    ViewRequestEvent,
    WindowEvent,
    WithdrawnEvent,
    WorkStateEvent,
)
from engine.messages import Message, ToolCall, assistant, notice, tool_result, user
from engine.report.context_report import (
    Category,
    ContextReport,
    RequestTracker,
    UsageReport,
    build_context_report,
    build_usage_report,
    compaction_row,
)
from engine.session.adapters import view_fallback_notice
from engine.session.admission import busy_refusal
from engine.store.records import Receipt, UsageSummary
from engine.window.resolution import WindowResolution


@dataclass
class FakeToolUse:
    """A tool call the fake model makes before its answer, and what the tool returned."""

    name: str
    arguments: str = "{}"
    result: str = "ok"


@dataclass
class FakeTurn:
    """What one `send` streams back.

    `hold`: after the deltas, wait until cancelled (a turn that runs until Esc).
    `error`: end the turn with this error instead of usage.
    """

    deltas: list[str] = field(default_factory=lambda: ["Hello", " from", " the", " fake."])
    delay_s: float = 0.0
    hold: bool = False
    error: ErrorEvent | None = None
    notices: list[NoticeEvent] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    elapsed_s: float | None = None  # what TurnEndEvent reports (default: the real time taken)
    tools: list[FakeToolUse] = field(default_factory=list)
    # Compact before answering: (messages before, messages after, tokens the history drops to).
    compaction: tuple[int, int, int] | None = None


class FakeSession:
    def __init__(
        self,
        sink: EventSink,
        *,
        turns: list[FakeTurn] | None = None,
        history: list[Message] | None = None,
        window: int = 8192,
        source: str = "model-max",
        window_warnings: list[str] | None = None,
        agent_name: str = "default",
        model: str = "SmolLM2-135M-Instruct",
        start_delay_s: float = 0.0,
        start_error: Exception | None = None,
        base_prompt_tokens: int = 180,
        load_progress: list[float] | None = None,
        work_state: str = "",
    ) -> None:
        self._sink = sink
        self._turns = list(turns or [])
        self._history = list(history or [])
        self._window = window
        self._source = source
        self._window_warnings = list(window_warnings or [])
        self._start_delay_s = start_delay_s
        self._start_error = start_error
        self._used = base_prompt_tokens
        self._base = base_prompt_tokens
        self._load_progress = list(load_progress or [])
        self._tracker = RequestTracker()
        self._tracker.resumed = bool(history)
        self._usage: list[tuple[int, int, int | None]] = []
        self.work_state = work_state
        self.retries = 0
        self.commands: list[str] = []
        self._cancel: asyncio.Event | None = None
        self._lock = threading.Lock()
        self.agent: AgentConfig = default_agent().with_changes(name=agent_name, model=model)
        self.workspace: Path | None = None
        self.conversation_id = uuid.uuid4().hex
        self.sent: list[str] = []
        self.pins: list[int] = []  # lower_pin's calls (a spill_choice answered)
        self.cancels = 0
        self.closed = False
        self.call_threads: set[int] = set()
        self._started: asyncio.Future[bool] | None = None
        self._held = False  # a submission holds the session (as ChatSession's Admission)

    def _enter(self) -> None:
        with self._lock:
            self.call_threads.add(threading.get_ident())

    async def start(self) -> None:
        self._enter()
        started = self._started = asyncio.get_running_loop().create_future()
        try:
            await self._start()
        except BaseException:
            started.set_result(False)
            raise
        started.set_result(True)

    async def _start(self) -> None:
        self._sink(StateEvent("loading model"))
        for fraction in self._load_progress:
            await asyncio.sleep(self._start_delay_s / max(1, len(self._load_progress)))
            self._sink(LoadProgressEvent(fraction))
        if self._start_delay_s and not self._load_progress:
            await asyncio.sleep(self._start_delay_s)
        if self._start_error is not None:
            raise self._start_error
        self._sink(
            WindowEvent(
                window=self._window,
                source=self._source,
                warnings=list(self._window_warnings),
                conversation=self.conversation_id,
            )
        )
        for warning in self._window_warnings:  # like the real session: said once, by the
            self._history.append(notice(warning, "warning"))  # window event, and saved
        self._sink(ContextReportEvent(self.context_report()))
        self._sink(StateEvent("ready"))

    @property
    def window(self) -> WindowResolution | None:
        return None  # the header names the agent's model

    async def send(self, text: str) -> None:
        """Like ChatSession.send, it follows the engine's router and says what it took (an
        AcceptedEvent) or refuses it while a turn runs; one taken while `start` still runs
        waits for it. A report is answered, a view requested; anything else (a message,
        /compact, /learn) is a scripted turn."""
        self._enter()
        decision = route(text)
        if decision.while_busy:
            self._sink(decision.accepted)
            self._answer_beside(decision)
            return
        if self._held:
            waiting = self._started is not None and not self._started.done()
            self._sink(busy_refusal(waiting=waiting))  # the words ChatSession says
            return
        self._sink(decision.accepted)
        self._held = True
        try:
            try:
                started = self._started is None or await asyncio.shield(self._started)
            except asyncio.CancelledError:
                accepted = decision.accepted
                self._sink(WithdrawnEvent(text, accepted.action, accepted.submission))
                raise
            if not started:
                self._sink(ErrorEvent("no_session", "The session did not start.", retryable=True))
                return
            if decision.view == VIEW_NEW_CONVERSATION:
                self._sink(ViewRequestEvent(decision.view))
                await self.open_conversation(None)
                return
            await self._scripted_turn(text)
        finally:
            self._held = False

    def _answer_beside(self, decision: Route) -> None:
        if decision.action is Action.REPORT and decision.command is not None:
            self.answer_command(decision.command.text)
            return
        self._sink(ViewRequestEvent(decision.view))
        # and the words for a front end without the view, as ChatSession says them
        self._sink(view_fallback_notice(decision.view, "the agent's file"))

    async def _scripted_turn(self, text: str) -> None:
        with self._lock:
            self.sent.append(text)
        turn = self._turns.pop(0) if self._turns else FakeTurn()
        self._cancel = asyncio.Event()
        began = time.monotonic()
        self._history.append(user(text))
        self._sink(StateEvent("streaming"))
        for event in turn.notices:
            self._sink(event)
        if turn.compaction is not None:
            self._compact(*turn.compaction)
        for index, use in enumerate(turn.tools):
            call = ToolCall(f"call_{len(self.sent)}_{index}", use.name, use.arguments)
            self._history.append(assistant("", (call,)))
            self._sink(ToolCallEvent(call.id, call.name, call.arguments))
            await asyncio.sleep(turn.delay_s)
            self._history.append(tool_result(call, use.result))
            self._sink(ToolResultEvent(call.id, call.name, len(use.result), False, use.result))
        produced: list[str] = []
        try:
            for delta in turn.deltas:
                if self._cancel.is_set():
                    break
                produced.append(delta)
                self._sink(DeltaEvent(delta))
                await asyncio.sleep(turn.delay_s)
            if turn.hold:
                await self._cancel.wait()
            if turn.error is not None:
                self._sink(turn.error)
                return
            prompt = turn.prompt_tokens or self._used + len(text) // 4 + 8
            completion = turn.completion_tokens or len(produced)
            self._used = prompt + completion
            self._usage.append((prompt, completion, turn.cached_tokens))
            self._sink(UsageEvent(prompt, completion, turn.cached_tokens))
            self._tracker.on_usage(prompt, turn.cached_tokens)
            self._tracker.on_context(prompt, self._window, estimated=False)
            self._sink(
                ContextEvent(
                    used=prompt,
                    window=self._window,
                    percent=100.0 * prompt / self._window,
                    source=self._source,
                )
            )
            self._sink(ContextReportEvent(self.context_report()))
            elapsed = turn.elapsed_s or max(time.monotonic() - began, 1e-3)
            self._sink(TurnEndEvent(elapsed, prompt, completion, completion / elapsed))
        finally:
            if produced:
                self._history.append(assistant("".join(produced)))
            self._cancel = None
            self._sink(StateEvent("ready"))

    def cancel(self) -> None:
        self._enter()
        with self._lock:
            self.cancels += 1
        if self._cancel is not None:
            self._cancel.set()

    async def close(self) -> None:
        self._enter()
        self.closed = True

    def history(self) -> list[Message]:
        self._enter()
        return list(self._history)

    def lower_pin(self, num_ctx: int) -> bool:
        self.pins.append(num_ctx)
        return True

    def transcript(self) -> list[Message]:
        return self.history()

    def turn_receipts(self) -> list[Receipt]:
        return []  # the fake saves none

    # -- what the real session also answers (engine/report/context_report.py builds them) --

    def context_report(self) -> ContextReport:
        messages = max(0, self._used - self._base)
        return build_context_report(
            budget=ContextBudget(self._window),
            source=self._source,
            estimate=self._used,
            tracker=self._tracker,
            categories=[
                Category("System prompt", self._base),
                Category("Tool schemas", 0),
                Category("Project context", 0),
                Category("Memory", 0),
                Category("Messages", messages),
            ],
        )

    def usage_report(self) -> UsageReport:
        if not self._usage:
            return build_usage_report([])
        cached = [c for _, _, c in self._usage if c is not None]
        return build_usage_report(
            [
                UsageSummary(
                    "embedded",
                    self.agent.model,
                    len(self._usage),
                    sum(p for p, _, _ in self._usage),
                    sum(cached) if cached else None,
                    sum(c for _, c, _ in self._usage),
                )
            ]
        )

    def answer_command(self, command: str) -> None:
        self._enter()
        self.commands.append(command)
        if command == "/context":
            self._sink(ContextReportEvent(self.context_report(), snapshot=True))
        elif command == "/usage":
            self._sink(UsageReportEvent(self.usage_report()))
        elif command == "/work":
            self._sink(WorkStateEvent(self.work_state))
        elif command == "/work clear":
            self.work_state = ""
            self._sink(WorkStateEvent("", cleared=True))

    async def open_conversation(self, conversation_id: str | None) -> None:
        self._enter()
        self.conversation_id = conversation_id or uuid.uuid4().hex
        self._history = []
        self._used = self._base
        self._tracker.reset()
        self._sink(ContextReportEvent(self.context_report()))
        self._sink(StateEvent("ready"))

    async def retry(self) -> None:
        self._enter()
        self.retries += 1
        self._sink(StateEvent("ready"))

    def _compact(self, before: int, after: int, drops_to: int) -> None:
        self._sink(StateEvent("compacting"))
        self._sink(CompactionEvent("started", "preflight", messages_before=before))
        self._sink(CompactionEvent("finished", "preflight", before, after, self._used - drops_to))
        text = compaction_row(before, after, self._used, self._window, "preflight")
        self._history.append(notice(text).with_meta(marker="compaction"))
        self._sink(NoticeEvent("info", text, "compaction"))
        self._tracker.on_marker("compaction", f"{before} -> {after} messages")
        self._used = drops_to
        self._sink(ContextReportEvent(self.context_report()))
        self._sink(StateEvent("streaming"))
