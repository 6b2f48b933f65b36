"""The agent editor's "Does this pin fit?" panel: the KV cache the pin costs for f16, q8_0 and
q4_0 side by side, the total, the GPU memory free now (NVML; "unknown" without an NVIDIA
driver, never a guess), the verdict, and the largest window that stays on the GPU for each
KV type. The figures are the engine's (engine/fit, through engine/api.py); this only draws
them, and asks again a moment after the agent is edited.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from desktop import theme
from engine.api import AgentConfig, AgentFit, FitUnavailable, fit_for_agent

KV_TYPES = ("f16", "q8_0", "q4_0")
DEBOUNCE_MS = 400
VERDICTS: dict[str, tuple[str, str]] = {  # verdict -> (words, colour)
    "fits_on_gpu": ("Fits on the GPU", theme.FILL_OK),
    "spills_to_cpu": ("Spills to the CPU: expect slow answers", theme.WARN_MARK),
    "does_not_fit": ("Does not fit in GPU and RAM together", theme.ERROR_TEXT),
    "unknown": ("Unknown: the GPU's free memory cannot be read here", theme.MUTED),
}
Call = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[str], None]], bool]


def mib(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / 1024**3:,.2f} GiB" if n >= 1024**3 else f"{n / 1024**2:,.0f} MiB"


class FitPanel(QGroupBox):
    """Shows an `AgentFit`, or why there is none. `call` runs work on the engine thread."""

    def __init__(self, call: Call | None = None, parent: QWidget | None = None) -> None:
        super().__init__("Does this pin fit?", parent)
        self.setObjectName("fitPanel")
        self._call = call
        self._agent: AgentConfig | None = None
        self._token = 0
        self._timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._timer.timeout.connect(self._ask)
        self.headline = QLabel("", objectName="fitHeadline")
        self.headline.setWordWrap(True)
        self.grid = QGridLayout()
        self.cells: dict[tuple[str, str], QLabel] = {}
        for col, kv_type in enumerate(KV_TYPES, start=1):
            self.grid.addWidget(QLabel(f"<b>{kv_type}</b>"), 0, col)
        for row, (key, title) in enumerate(
            (("kv", "KV cache"), ("largest", "Largest window on the GPU")), start=1
        ):
            self.grid.addWidget(QLabel(title), row, 0)
            for col, kv_type in enumerate(KV_TYPES, start=1):
                cell = QLabel("–")
                self.cells[(key, kv_type)] = cell
                self.grid.addWidget(cell, row, col)
        self.total = QLabel("")
        self.gpu_free = QLabel("")
        self.verdict = QLabel("", objectName="fitVerdict")
        self.verdict.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addLayout(self.grid)
        layout.addWidget(self.total)
        layout.addWidget(self.gpu_free)
        layout.addWidget(self.verdict)

    def request(self, agent: AgentConfig | None) -> None:
        """The agent as edited (None while a field is invalid): estimated shortly after."""
        self._agent = agent
        if agent is not None and self._call is not None:
            self._timer.start()

    def _ask(self) -> None:
        agent, call = self._agent, self._call
        if agent is None or call is None:
            return
        self._token += 1
        token = self._token

        def done(result: Any) -> None:
            if not shiboken6.isValid(self) or token != self._token:
                return  # the dialog closed, or an older answer: the agent was edited since
            if isinstance(result, AgentFit):
                self.show_fit(result)
            else:
                self.show_none(str(result))

        async def run() -> AgentFit | str:
            try:
                return await fit_for_agent(agent)
            except FitUnavailable as exc:
                return str(exc)

        call(run, done, lambda message: done(message))

    def show_none(self, reason: str) -> None:
        self.headline.setText(f"No estimate: {html.escape(reason)}")
        for cell in self.cells.values():
            cell.setText("–")
        self.total.setText("")
        self.gpu_free.setText("")
        self.verdict.setText("")

    def show_fit(self, fit: AgentFit) -> None:
        model = fit.model
        window = f"num_ctx {fit.num_ctx:,}" + (
            "" if fit.pinned else " (unpinned: the training length)"
        )
        self.headline.setText(
            f"{html.escape(str(model.get('name') or model.get('architecture')))} · "
            f"{model.get('quantization')} · {window}"
        )
        for kv_type in KV_TYPES:
            self.cells[("kv", kv_type)].setText(mib(fit.kv_bytes[kv_type]))
            largest = fit.max_num_ctx_on_gpu.get(kv_type)
            self.cells[("largest", kv_type)].setText(
                "unknown" if largest is None else f"{largest:,}" if largest else "none fits"
            )
        self.total.setText(f"Total at {fit.kv_cache_type}: <b>{mib(fit.total_bytes)}</b>")
        free = (
            mib(fit.gpu_free_bytes)
            if fit.gpu_free_bytes is not None
            else "unknown (no NVIDIA driver answered)"
        )
        self.gpu_free.setText(f"GPU memory free now: {free}")
        words, colour = VERDICTS.get(fit.verdict, (fit.verdict, theme.MUTED))
        self.verdict.setText(f"<b style='color:{colour}'>{words}</b>")
