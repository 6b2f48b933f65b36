"""The window's other half: how it shows what the engine says.

`MainWindow` (desktop/main_window.py) builds the widgets and answers the desks; this mixin
draws the engine's events onto those same widgets: the session that opened, each event of
a turn (text, tools, notices, reports, errors), the views the engine asked for, and the
turn's end. It is part of the window, not a desk: the window's widgets have no other
writer (tests/test_house_rules.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QMetaMethod, Signal, Slot

from desktop.bridge import EngineBridge, SessionInfo
from desktop.format import format_receipt
from desktop.stream_buffer import StreamBuffer
from desktop.widgets.banner import Banner
from desktop.widgets.composer import Composer
from desktop.widgets.composer_row import SendButton, StateHint
from desktop.widgets.context_rail import ContextRail
from desktop.widgets.header import HeaderBar
from desktop.widgets.load_progress import LoadProgress
from desktop.widgets.overlay import Overlay
from desktop.widgets.transcript import TranscriptView
from desktop.widgets.transcript_rows import notice_action
from engine.api import (
    NOTICE_REPETITION,
    NOTICE_VIEW_FALLBACK,
    VIEW_NEW_CONVERSATION,
    AcceptedEvent,
    CompactionRestoredEvent,
    CompactionViewEvent,
    ContextEvent,
    ContextReportEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    LastRequestEvent,
    LoadProgressEvent,
    NoticeEvent,
    ReasoningEndEvent,
    ReasoningEvent,
    RequestViewEvent,
    StateEvent,
    StepEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageReportEvent,
    ViewRequestEvent,
    WindowEvent,
    WithdrawnEvent,
    WorkStateEvent,
)


class EventRendering:
    """Mixed into `MainWindow`, which makes everything named here in its `__init__`."""

    bridge: EngineBridge
    header: HeaderBar
    banner: Banner
    load_progress: LoadProgress
    transcript: TranscriptView
    composer: Composer
    send_button: SendButton
    hint: StateHint
    stream: StreamBuffer
    thought: StreamBuffer
    rail: ContextRail
    overlay: Overlay
    learn_started: Signal
    _turns: int
    _shown_warnings: set[str]
    _conversation: str
    _submission: tuple[str, str]
    _view_signals: dict[str, Signal]

    if TYPE_CHECKING:  # QMainWindow's and MainWindow's own; never defined here

        def setWindowTitle(self, title: str) -> None: ...
        def isSignalConnected(self, signal: QMetaMethod) -> bool: ...
        def prepare_for_conversation(self) -> None: ...

    @Slot(object)
    def on_opened(self, info: SessionInfo) -> None:
        self.header.set_agent(info.agent_name, info.model)
        self.transcript.set_assistant_name(info.agent_name)
        title = " — ".join(part for part in ("Brim", info.agent_name) if part)
        self.setWindowTitle(title)
        if info.conversation_id != self._conversation:
            self._conversation = info.conversation_id
        self.transcript.set_history(info.history, info.receipts)
        self._turns = sum(1 for m in info.history if m.role == "user" and m.kind == "chat")
        self.header.set_turn(self._turns)

    @Slot(str)
    def _on_open_failed(self, _message: str) -> None:
        self.header.set_state("not started")  # the banner already says why
        self.load_progress.hide()
        # Nothing is open: no numbers of the conversation shown before may stay up.
        self.rail.clear()
        self.header.clear_context()

    @Slot(object)
    def on_event(self, event: Event) -> None:
        if isinstance(event, DeltaEvent):
            self.thought.flush()  # the reasoning before it stays above it
            self.stream.append(event.text)
            return
        if isinstance(event, ReasoningEvent):
            self.stream.flush()
            self.thought.append(event.text)
            return
        self.thought.flush()
        self.stream.flush()  # whatever streamed before this event is shown before it
        match event:
            case ReasoningEndEvent():
                self.transcript.end_thinking(event.tokens, event.seconds, event.estimated)
            case WindowEvent():
                self.header.set_window(event.window, event.source, event.warnings)
                for warning in event.warnings:
                    if warning not in self._shown_warnings:
                        self._shown_warnings.add(warning)
                        self.transcript.add_notice(warning, "warning")
            case ContextEvent():
                self.header.show_last_request(event)
            case ContextReportEvent():
                if event.snapshot:
                    self.overlay.show_context(event.report)
                else:
                    self.rail.set_report(event.report)
                    self.header.show_report(event.report)
            case UsageReportEvent():
                self.overlay.show_usage(event.report)
            case CompactionViewEvent():
                view = self.overlay.show_compaction(event, self.transcript.assistant_name)
                view.restore_requested.connect(self._restore_compaction)
            case RequestViewEvent():
                self.overlay.show_request(event)
            case LastRequestEvent():
                self.transcript.mark_cut(event)
            case CompactionRestoredEvent():
                self.transcript.mark_restored(event.compaction)
                view = self.overlay.compaction_view()
                if view is not None and view.view_event.compaction == event.compaction:
                    self.overlay.close_overlay()
            case WorkStateEvent():
                if event.cleared:
                    self.transcript.add_notice("Work state cleared for this conversation.")
                else:
                    self.overlay.show_work(event.text, tools=event.tools)
            case AcceptedEvent():
                self._on_accepted(event)
            case WithdrawnEvent():
                # Dropped before it ran (Esc while the model loaded): it was never sent, so
                # its row goes and the text returns to the composer.
                if event.action == "message":
                    self.transcript.take_back(event.submission, event.text)
                    self._turns = max(0, self._turns - 1)
                    self.header.set_turn(self._turns)
                self.composer.put_back(event.text)  # what was typed since stays, after it
            case ViewRequestEvent():
                self._open_view(event.view)
            case NoticeEvent(transient=True):
                pass  # the ladder's passing words: the header's state and the saved row say it
            case NoticeEvent(kind=kind) if kind == NOTICE_VIEW_FALLBACK:
                # Words for a front end without the view: shown only when no desk opens it.
                if not self._opens_view(str(event.details.get("view", ""))):
                    self._notice(event.text, event.level)
            case NoticeEvent():
                if event.kind == NOTICE_REPETITION:
                    # The loop's repeats are not in the saved answer; nor are they shown.
                    self.transcript.drop_answer_tail(int(event.details.get("dropped_chars", 0)))
                ref = event.details.get("compaction", "") if event.marker == "compaction" else ""
                action = notice_action(event.kind, event.details)
                self._notice(event.text, event.level, event.marker, str(ref or ""), action)
            case StateEvent():
                self._on_state(event.state)
                if event.state == "ready":  # the run is over (a compaction keeps the step)
                    self.header.set_step(0, None)
            case StepEvent():
                self.header.set_step(event.step, event.max_steps)
                self.header.clear_rate()  # the last answer's speed is not this one's
            case LoadProgressEvent():
                self.load_progress.show_fraction(event.fraction)
            case ToolCallEvent():
                self.transcript.finish_stream()
                self.transcript.add_tool_call(event.id, event.name, event.arguments)
            case ToolResultEvent():
                status = f"{event.chars:,} chars" + (" (cut)" if event.truncated else "")
                if event.is_error:
                    status = "error"
                self.transcript.finish_tool(event.id, event.preview, status)
            case TurnEndEvent():
                self.transcript.finish_stream()
                self.header.set_rate(event.tokens_per_s)
                self.transcript.add_receipt(
                    format_receipt(
                        event.elapsed_s,
                        event.prompt_tokens,
                        event.completion_tokens,
                        event.tokens_per_s,
                        cached_tokens=event.cached_tokens,
                        cache_reported=event.cached_tokens is not None,
                    )
                )
            case ErrorEvent(kind="message_too_large"):
                # Refused before anything was sent or compacted: the text goes back into the
                # composer (nothing typed is lost) and its row leaves the transcript.
                self.banner.show_error(event.kind, event.message, retry=event.retryable)
                submission, text = self._submission
                self.transcript.take_back(submission, text)
                self._turns = max(0, self._turns - 1)
                self.header.set_turn(self._turns)
                if not self.composer.toPlainText():
                    self.composer.setPlainText(text)
            case ErrorEvent(kind="busy"):
                # Refused beside a running turn: the turn and its streaming row go on.
                self.banner.show_error(event.kind, event.message, retry=event.retryable)
            case ErrorEvent():
                self.transcript.finish_stream()
                self.header.note_error(event.kind)
                self.banner.show_error(event.kind, event.message, retry=event.retryable)
                if self.bridge.busy:  # mark where the answer failed; start-up faults need no row
                    self.transcript.add_error(self.banner.text())
            case _:
                pass  # compaction, trim, clear, usage: the rail's report carries them

    def _open_view(self, view: str) -> None:
        if view == VIEW_NEW_CONVERSATION:
            self.prepare_for_conversation()  # the session opened it; its report follows
        signal = self._view_signals.get(view)
        if signal is not None:
            signal.emit()

    def _opens_view(self, view: str) -> bool:
        """Some desk is connected to the intent signal of `view`."""
        signal = self._view_signals.get(view)
        return signal is not None and self.isSignalConnected(QMetaMethod.fromSignal(signal))

    def _on_state(self, state: str) -> None:
        self.header.set_state(state)
        self.hint.show_state(state)
        if state == "loading model":
            self.load_progress.show_loading()
        elif state in ("ready", "thinking", "streaming", "waiting for the engine", "not started"):
            self.load_progress.hide()

    def _on_accepted(self, event: AcceptedEvent) -> None:
        if self.composer.toPlainText() == event.text:
            self.composer.take_text()  # what was typed since stays
        if not event.takes_turn:
            return  # a report or a view: it comes back as an event
        self.banner.hide()
        if event.action == "message":
            self.transcript.add_user(event.text, event.submission)
            self._submission = (event.submission, event.text)  # a refusal of it names no id
            self._turns += 1
            self.header.set_turn(self._turns)
        elif event.action == "learn" and not self.bridge.replaying:
            self.learn_started.emit()  # not again for a conversation drawn anew on its return

    def _notice(
        self, text: str, level: str, marker: str = "", ref: str = "", action: str = ""
    ) -> None:
        if level == "warning" and text in self._shown_warnings:
            return  # the window warning and its notice are one message to the user
        # Any other warning (a trim, the iteration ramp) is shown each time it happens.
        self.transcript.add_notice(text, level, marker, ref, action)

    @Slot()
    def _on_turn_finished(self) -> None:
        self.thought.flush()
        self.stream.flush()
        self.transcript.finish_stream()
        if self.banner.isVisible() and self.banner.kind == "busy":
            self.banner.hide()  # "a turn is still running" is no longer true

    @Slot(bool)
    def _on_busy_changed(self, busy: bool) -> None:
        self.send_button.set_busy(busy)
        self.stop_action.setEnabled(busy)
