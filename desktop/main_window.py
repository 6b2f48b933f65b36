"""The minimal conversation window: header, fault banner, transcript and composer.

It renders engine events and turns keystrokes into intents on the bridge; every decision
about tokens, windows and turns stays in the engine.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.bridge import EngineBridge, SessionInfo
from desktop.format import format_receipt
from desktop.stream_buffer import StreamBuffer
from desktop.widgets.banner import ErrorBanner
from desktop.widgets.composer import Composer
from desktop.widgets.header import HeaderBar
from desktop.widgets.transcript import TranscriptView
from engine.events import (
    ContextEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    StateEvent,
    TurnEndEvent,
    WindowEvent,
)


class MainWindow(QMainWindow):
    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("Brim")
        self.setStyleSheet(theme.STYLE_SHEET)
        self.resize(1100, 760)
        self._turns = 0
        self._shown_warnings: set[str] = set()

        self.header = HeaderBar()
        self.banner = ErrorBanner()
        self.transcript = TranscriptView()
        self.composer = Composer()
        self.send_button = QPushButton("Send", objectName="sendButton")
        self.send_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.hint = QLabel("Enter sends  ·  Shift+Enter new line  ·  Esc stops", objectName="hint")
        self.stream = StreamBuffer(parent=self)

        composer_box = QFrame(objectName="composerBox")
        box = QHBoxLayout(composer_box)
        box.setContentsMargins(8, 6, 6, 6)
        box.addWidget(self.composer, 1)
        box.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)

        body = QVBoxLayout()
        body.setContentsMargins(14, 12, 14, 10)
        body.setSpacing(8)
        body.addWidget(self.banner)
        body.addWidget(self.transcript, 1)
        body.addWidget(composer_box)
        body.addWidget(self.hint)

        central = QWidget(objectName="central")
        outer = QVBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self.header)
        outer.addLayout(body, 1)
        self.setCentralWidget(central)

        self.composer.submitted.connect(self._on_submitted)
        self.composer.cancel_requested.connect(self.cancel_turn)
        self.send_button.clicked.connect(self._on_send_button)
        self.stream.flushed.connect(self.transcript.append_stream)
        bridge.event.connect(self.on_event)
        bridge.opened.connect(self.on_opened)
        bridge.open_failed.connect(self._on_open_failed)
        bridge.turn_finished.connect(self._on_turn_finished)
        bridge.busy_changed.connect(self._on_busy_changed)
        self.composer.setFocus()

    # -- intents ----------------------------------------------------------------------------

    @Slot()
    def cancel_turn(self) -> None:
        if self.bridge.busy:
            self.bridge.cancel()

    @Slot(str)
    def _on_submitted(self, text: str) -> None:
        if self.bridge.busy or not self.bridge.send(text):
            return  # a turn is running: the text stays in the composer for later
        self.composer.take_text()
        self.banner.hide()
        self.transcript.add_user(text)
        self._turns += 1
        self.header.set_turn(self._turns)

    @Slot()
    def _on_send_button(self) -> None:
        if self.bridge.busy:
            self.cancel_turn()
        else:
            self.composer.submit()
        self.composer.setFocus()

    # -- engine → view ----------------------------------------------------------------------

    @Slot(object)
    def on_opened(self, info: SessionInfo) -> None:
        self.header.set_agent(info.agent_name, info.model)
        self.transcript.set_assistant_name(info.agent_name)
        title = " — ".join(part for part in ("Brim", info.agent_name) if part)
        self.setWindowTitle(title)
        self.transcript.set_history(info.history)
        self._turns = sum(1 for m in info.history if m.role == "user" and not m.is_notice)
        self.header.set_turn(self._turns)

    @Slot(str)
    def _on_open_failed(self, _message: str) -> None:
        self.header.set_state("not started")  # the banner already says why

    @Slot(object)
    def on_event(self, event: Event) -> None:
        if isinstance(event, DeltaEvent):
            self.stream.append(event.text)
            return
        self.stream.flush()  # whatever streamed before this event is shown before it
        match event:
            case WindowEvent():
                self.header.set_window(event.window, event.source, event.warnings)
                for warning in event.warnings:
                    self._notice(warning, "warning")
            case ContextEvent():
                self.header.set_context(
                    event.used,
                    event.window,
                    event.percent,
                    event.source,
                    estimated=event.estimated,
                )
            case NoticeEvent():
                self._notice(event.text, event.level)
            case StateEvent():
                self.header.set_state(event.state)
            case TurnEndEvent():
                self.transcript.finish_stream()
                self.header.set_rate(event.tokens_per_s)
                self.transcript.add_receipt(
                    format_receipt(
                        event.elapsed_s,
                        event.prompt_tokens,
                        event.completion_tokens,
                        event.tokens_per_s,
                    )
                )
            case ErrorEvent():
                self.transcript.finish_stream()
                self.banner.show_error(event.kind, event.message)
                if self.bridge.busy:  # mark where the answer failed; start-up faults need no row
                    self.transcript.add_error(self.banner.text())
            case _:
                pass  # tool calls, compaction, trimming: rendered by later views

    def _notice(self, text: str, level: str) -> None:
        if level == "warning":
            if text in self._shown_warnings:
                return  # the window warning and its notice are one message to the user
            self._shown_warnings.add(text)
        self.transcript.add_notice(text, level)

    @Slot()
    def _on_turn_finished(self) -> None:
        self.stream.flush()
        self.transcript.finish_stream()

    @Slot(bool)
    def _on_busy_changed(self, busy: bool) -> None:
        self.send_button.setText("Stop" if busy else "Send")
        self.send_button.setToolTip("Cancel the running turn (Esc)" if busy else "Send (Enter)")
        self.send_button.setProperty("stop", busy)
        self.send_button.style().unpolish(self.send_button)
        self.send_button.style().polish(self.send_button)
