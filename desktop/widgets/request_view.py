"""What the model saw: the last request as the engine received it, shown in the overlay.

Everything it says comes from the engine's `RequestViewEvent` (`/context show`): each
part's tokens, what changed since the request before, and the request itself, as the
engine's chat template rendered it where Brim could ask, else its messages.
"""

from __future__ import annotations

import time

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from engine.api import RequestViewEvent, format_tokens

PART_NAMES = {
    "system": "System prompt",
    "checkpoint": "Checkpoint",
    "kept": "Kept messages",
    "new": "The new message",
    "tools": "Tools",
    "framing": "Template framing",
}
NOTHING_SENT = "Nothing has been sent to the model in this conversation yet."


def parts_text(event: RequestViewEvent) -> str:
    lines = []
    for part in event.parts:
        name = PART_NAMES.get(str(part["part"]), str(part["part"]))
        count = int(part["messages"])
        what = "schema" if part["part"] == "tools" else "message"
        held = f" · {count} {what}{'' if count == 1 else 's'}" if count else ""
        lines.append(f"{name}: {format_tokens(int(part['tokens']))} tokens{held}")
    return "\n".join(lines)


def changes_text(event: RequestViewEvent) -> str:
    if not event.compared:
        return "The first request of this conversation here: nothing to compare with."
    if not event.changes:
        return "Nothing changed but what it adds."
    lines = []
    for change in event.changes:
        where = (
            f"#{change['position'] + 1}" if change["position"] >= 0 else f"was #{change['was'] + 1}"
        )
        if change["change"] == "moved":
            where = f"#{change['was'] + 1} → #{change['position'] + 1}"
        lines.append(f"{change['change']:>8}  {change['role']:<9} {where:<10} {change['preview']}")
    return "\n".join(lines)


def request_text(event: RequestViewEvent) -> str:
    if event.rendered:
        return event.rendered
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in event.messages)


class RequestView(QWidget):
    def __init__(self, event: RequestViewEvent, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view_event = event
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        if not event.sent:
            self.figures = QLabel(NOTHING_SENT, objectName="railValue")
            layout.addWidget(self.figures)
            self.parts = self.changes = QLabel("")
            self.request = QPlainTextEdit()
            return
        sent = time.strftime("%H:%M:%S", time.localtime(event.at))
        self.figures = QLabel(
            f"Sent at {sent}: {format_tokens(event.engine_tokens)} tokens by the engine's "
            f"count, {format_tokens(event.counted_tokens)} by Brim's",
            objectName="railValue",
        )
        self.figures.setWordWrap(True)
        self.parts = QLabel(parts_text(event), objectName="railValue")
        self.changes = QLabel(changes_text(event), objectName="railMuted")
        # Its lines are padded into columns (change, role, position, preview): fixed pitch.
        self.changes.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.changes.setWordWrap(True)
        how = f"rendered by {event.rendered_by}" if event.rendered_by else "its messages"
        self.request = QPlainTextEdit(objectName="requestText")
        self.request.setReadOnly(True)
        self.request.setPlainText(request_text(event))
        self.request.setMinimumHeight(220)
        layout.addWidget(self.figures)
        layout.addWidget(QLabel("PARTS", objectName="sectionTitle"))
        layout.addWidget(self.parts)
        layout.addWidget(QLabel("SINCE THE REQUEST BEFORE", objectName="sectionTitle"))
        layout.addWidget(self.changes)
        layout.addWidget(QLabel(f"THE REQUEST · {how}", objectName="sectionTitle"))
        layout.addWidget(self.request, 1)

    def text(self) -> str:
        """What the view says, for tests and copying."""
        lines = [self.figures.text(), self.parts.text(), self.changes.text()]
        return "\n".join(line for line in lines if line)
