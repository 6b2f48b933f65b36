"""The header: agent, model, turn, `ctx 6K/128K <source>`, throughput and the state word."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from desktop import theme
from desktop.format import format_context, format_rate
from engine.api import ContextEvent, ContextReport

UNREACHABLE = "unreachable"  # the error kind, and what the pill then says


class HeaderBar(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("header")
        self._used: int | None = None
        self._window: int | None = None
        self._source = ""
        self._estimated = False
        self._percent: float | None = None
        self._describes = ""  # "last request" | "next request": which one the numbers are
        self._warnings: list[str] = []
        self._context_plain = ""
        self._turn = 0
        self._step = 0
        self._max_steps: int | None = None
        self._unreachable = False  # the last request found no engine: "ready" would be a lie

        self.agent_label = QLabel("Brim", objectName="agentName")
        self.model_label = QLabel("", objectName="modelName")
        self.turn_label = QLabel("", objectName="turn")
        self.context_label = QLabel("", objectName="context")
        self.context_label.setTextFormat(Qt.TextFormat.RichText)
        self.rate_label = QLabel("", objectName="rate")
        self.state_label = QLabel("", objectName="statePill")

        layout = QHBoxLayout(self)
        layout.setContentsMargins(14, 8, 14, 8)
        layout.setSpacing(14)
        layout.addWidget(self.agent_label)
        layout.addWidget(self.model_label)
        layout.addStretch(1)
        for label in (self.turn_label, self.context_label, self.rate_label, self.state_label):
            layout.addWidget(label)
        self.set_state("starting")
        self._render_context()

    def text(self) -> str:
        """Everything the header shows, as one line (what a user would read across it)."""
        labels = (
            self.agent_label,
            self.model_label,
            self.turn_label,
            self.context_label,
            self.rate_label,
            self.state_label,
        )
        texts = [
            self._context_plain if label is self.context_label else label.text() for label in labels
        ]
        return " ".join(text for text in texts if text)

    def set_agent(self, name: str, model: str) -> None:
        self.agent_label.setText(name or "Brim")
        self.model_label.setText(model)
        self.model_label.setToolTip(model)

    def set_turn(self, turn: int) -> None:
        self._turn = turn
        self._step, self._max_steps = 0, None
        self._render_turn()

    def set_step(self, step: int, max_steps: int | None) -> None:
        """The running request of this turn against the run's iteration cap: `step 12/50`.

        Shown while a run goes on when the run has a cap (how close the limit is) or once it
        takes more than one request; cleared when the agent is back to ready."""
        self._step, self._max_steps = step, max_steps
        self._render_turn()

    def _render_turn(self) -> None:
        parts = [f"turn {self._turn}"] if self._turn > 0 else []
        if self._step > 0 and self._max_steps:
            parts.append(f"step {self._step}/{self._max_steps}")
        elif self._step > 1:
            parts.append(f"step {self._step}")
        self.turn_label.setText(" · ".join(parts))

    def set_window(self, window: int, source: str, warnings: list[str]) -> None:
        self._window = window
        self._source = source
        self._warnings = list(warnings)
        self._render_context()

    def set_context(
        self,
        used: int,
        window: int,
        percent: float,
        source: str,
        *,
        estimated: bool,
        describes: str = "",
    ) -> None:
        self._used, self._window, self._source = used, window, source
        self._percent = percent
        self._estimated = estimated
        self._describes = describes
        self._render_context()

    def show_last_request(self, event: ContextEvent) -> None:
        """What the last request took of the window, as the engine counted it."""
        self.set_context(
            event.used,
            event.window,
            event.percent,
            event.source,
            estimated=event.estimated,
            describes="last request",
        )

    def show_report(self, report: ContextReport) -> None:
        """The figures of a context report (`/context`, the report after each turn); one
        without a window clears them: the engine did not say, so none from before stay."""
        if not report.window:
            self.clear_context()
            return
        self.set_context(
            report.used,
            report.window,
            report.percent,
            report.source,
            estimated=report.estimated,
            describes=report.describes,
        )

    def clear_context(self) -> None:
        """No session (a failed start): no numbers left from the conversation before."""
        self._used = self._window = self._percent = None
        self._source, self._describes, self._warnings = "", "", []
        self._render_context()

    def set_rate(self, tokens_per_s: float) -> None:
        self.rate_label.setText(format_rate(tokens_per_s))

    def clear_rate(self) -> None:
        self.rate_label.setText("")

    def note_error(self, kind: str) -> None:
        """An error ended the turn: an unreachable engine keeps the pill saying so until the
        engine answers again."""
        self._unreachable = kind == UNREACHABLE
        if self._unreachable:
            self.set_state(UNREACHABLE)

    def set_state(self, state: str) -> None:
        if state not in ("ready", UNREACHABLE):
            self._unreachable = False  # the engine is doing something again
        elif state == "ready" and self._unreachable:
            state = UNREACHABLE
        background, colour = theme.STATE_COLOURS.get(state, theme.NEUTRAL_STATE)
        self.state_label.setText(state)
        self.state_label.setStyleSheet(f"background: {background}; color: {colour};")

    def state(self) -> str:
        return self.state_label.text()

    def _render_context(self) -> None:
        if self._window is None:
            self._context_plain = ""
            self.context_label.setText("")
            return
        self._context_plain = format_context(
            self._used, self._window, self._source, estimated=self._estimated
        )
        numbers, _, source = self._context_plain.rpartition(" ")
        which = f" · {self._describes}" if self._describes else ""
        self.context_label.setText(
            f"{html.escape(numbers)} <span style='color:{theme.MUTED}'>"
            f"{html.escape(source + which)}</span>"
        )
        self._context_plain += which
        tip = []
        if self._percent is not None:
            kind = "estimated" if self._estimated else "reported by the engine"
            which = f" by the {self._describes}" if self._describes else ""
            tip.append(f"{self._percent:.1f}% of the window used{which} ({kind})")
        tip.append(f"window source: {self._source}")
        tip.extend(self._warnings)
        self.context_label.setToolTip("\n".join(tip))
