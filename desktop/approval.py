"""Asking the person before a write or a command: the engine waits, the window decides.

`DialogApprover` is the engine's `Approver` for the desktop. Its `approve` runs on the engine
thread: it hands the request to the GUI thread as a ticket and awaits the ticket's future.
The dialog shows exactly what will run or change (the command line and folder, the diff or
the whole new file) and answers Allow once, Always for this conversation, or Deny. A turn
cancelled meanwhile withdraws the ticket and the dialog closes unanswered; Esc or closing
the dialog is a Deny, never an allow.
"""

from __future__ import annotations

import asyncio
import contextlib
import html

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from engine.api import (
    ApprovalDecision,
    ApprovalRequest,
)


class ApprovalTicket:
    """One open question; answered at most once, from any thread."""

    def __init__(
        self,
        request: ApprovalRequest,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[ApprovalDecision],
    ) -> None:
        self.request = request
        self._loop = loop
        self._future = future

    @property
    def open(self) -> bool:
        return not self._future.done()

    def answer(self, decision: ApprovalDecision) -> None:
        def settle() -> None:
            if not self._future.done():
                self._future.set_result(decision)

        with contextlib.suppress(RuntimeError):  # the engine loop already stopped
            self._loop.call_soon_threadsafe(settle)


class DialogApprover(QObject):
    """The desktop's approver. Signals are delivered on the GUI thread."""

    asked = Signal(object)  # ApprovalTicket
    withdrawn = Signal(object)  # ApprovalTicket: the turn was cancelled while it was open

    _asked_incoming = Signal(object)
    _withdrawn_incoming = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._asked_incoming.connect(self.asked, Qt.ConnectionType.QueuedConnection)
        self._withdrawn_incoming.connect(self.withdrawn, Qt.ConnectionType.QueuedConnection)

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        loop = asyncio.get_running_loop()
        ticket = ApprovalTicket(request, loop, loop.create_future())
        self._asked_incoming.emit(ticket)
        try:
            return await ticket._future
        except asyncio.CancelledError:
            self._withdrawn_incoming.emit(ticket)
            raise


TOOL_TITLES = {
    "write_file": "write a file",
    "edit_file": "edit a file",
    "run_command": "run a command",
}


def detail_html(detail: str) -> str:
    """The detail as monospaced text; a diff's added and removed lines coloured."""
    lines = []
    for line in detail.split("\n"):
        escaped = html.escape(line) or "&nbsp;"
        if line.startswith("+") and not line.startswith("+++"):
            lines.append(f'<span style="color:#1e6b3c; background:#e6f4ea;">{escaped}</span>')
        elif line.startswith("-") and not line.startswith("---"):
            red = theme.ERROR_TEXT
            lines.append(f'<span style="color:{red}; background:#fdecea;">{escaped}</span>')
        elif line.startswith("@@"):
            lines.append(f'<span style="color:{theme.MUTED};">{escaped}</span>')
        else:
            lines.append(escaped)
    body = "<br>".join(lines)
    return f"<div style=\"font-family:'DejaVu Sans Mono',monospace; white-space:pre;\">{body}</div>"


class ApprovalDialog(QDialog):
    """Allow once / Always for this conversation / Deny, over exactly what will happen."""

    decided = Signal(object)  # ApprovalDecision

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.decision: ApprovalDecision | None = None
        self.setObjectName("approvalDialog")
        self.setWindowTitle(f"Allow the agent to {TOOL_TITLES.get(request.tool, request.tool)}?")
        self.setModal(True)
        self.resize(720, 460)
        self.summary = QLabel(f"<b>{html.escape(request.summary)}</b>")
        self.summary.setWordWrap(True)
        self.tool_label = QLabel(f"Tool: {request.tool}", objectName="railMuted")
        self.detail = QTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setHtml(detail_html(request.detail))
        self.detail.setLineWrapMode(QTextEdit.LineWrapMode.NoWrap)
        self.allow_once = QPushButton("Allow once")
        self.allow_always = QPushButton("Always for this conversation")
        self.allow_always.setToolTip(request.always_label or "Do not ask again for this")
        self.deny = QPushButton("Deny")
        for button in (self.allow_once, self.allow_always, self.deny):
            button.setAutoDefault(False)
            button.setDefault(False)
        self.allow_once.clicked.connect(lambda: self._decide(ApprovalDecision.ALLOW_ONCE))
        self.allow_always.clicked.connect(lambda: self._decide(ApprovalDecision.ALLOW_ALWAYS))
        self.deny.clicked.connect(lambda: self._decide(ApprovalDecision.DENY))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.deny)
        buttons.addWidget(self.allow_always)
        buttons.addWidget(self.allow_once)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.tool_label)
        layout.addWidget(self.detail, 1)
        if request.always_label:
            note = QLabel(f"“Always” means: {request.always_label}.", objectName="railMuted")
            note.setWordWrap(True)
            layout.addWidget(note)
        layout.addLayout(buttons)

    def _decide(self, decision: ApprovalDecision) -> None:
        if self.decision is None:
            self.decision = decision
            self.decided.emit(decision)
        self.done(0 if decision is ApprovalDecision.DENY else 1)

    @Slot()
    def reject(self) -> None:
        """Esc or the window's close button: a Deny, never an allow."""
        if self.decision is None:
            self.decision = ApprovalDecision.DENY
            self.decided.emit(ApprovalDecision.DENY)
        super().reject()

    def withdraw(self) -> None:
        """The turn was cancelled: close without answering."""
        self.decision = ApprovalDecision.DENY if self.decision is None else self.decision
        super().reject()


class OpenApprovals(QObject):
    """The approval dialogs open over a window, one per ticket; `closed` once one goes
    (the window gives the composer its focus back)."""

    closed = Signal()

    def __init__(self, approver: DialogApprover, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self._dialogs: dict[int, ApprovalDialog] = {}
        approver.asked.connect(self._on_asked)
        approver.withdrawn.connect(self._on_withdrawn)

    @Slot(object)
    def _on_asked(self, ticket: ApprovalTicket) -> None:
        dialog = ApprovalDialog(ticket.request, self._parent)
        self._dialogs[id(ticket)] = dialog
        dialog.decided.connect(ticket.answer)
        dialog.finished.connect(lambda _code: self._forget(ticket))
        dialog.open()

    @Slot(object)
    def _on_withdrawn(self, ticket: ApprovalTicket) -> None:
        dialog = self._dialogs.pop(id(ticket), None)
        if dialog is not None:
            dialog.withdraw()

    def _forget(self, ticket: ApprovalTicket) -> None:
        dialog = self._dialogs.pop(id(ticket), None)
        if dialog is not None:
            dialog.deleteLater()
        self.closed.emit()

    def current(self) -> ApprovalDialog | None:
        """The approval dialog open now, if any."""
        return next(iter(self._dialogs.values()), None)
