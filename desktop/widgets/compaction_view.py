"""What a compaction replaced, shown in the overlay from its row's Show / Restore or its
timeline marker, with the Restore button.

Everything it says comes from the engine's `CompactionViewEvent`: the messages, whether
they can be put back, and whether the history would then stay below the auto-compact mark
(`fits`). When it would not, Restore first shows the engine's figures and asks again; only
"Restore anyway" sends the confirmed restore.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop import theme
from engine.api import CompactionViewEvent

SHOWN_CHARS = 1_500  # of one message; the rest is in the saved conversation


def role_label(message: dict[str, Any], assistant: str = "Assistant") -> str:
    if message.get("kind") == "summary":
        return "Earlier checkpoint"
    role = message.get("role")
    if role == "user":
        return "You"
    if role == "tool":
        return f"Tool result · {message.get('name') or 'tool'}"
    if role == "system":
        return "System"
    return assistant


def message_text(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "").strip()
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS].rstrip() + f" … ({len(text) - SHOWN_CHARS:,} more characters)"
    calls = [c.get("name", "") for c in message.get("tool_calls") or []]
    if calls:
        text = (text + "\n" if text else "") + "calls " + ", ".join(calls)
    return text


def shown(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The replaced messages a person reads (the continuation note is Brim's, not theirs)."""
    return [m for m in messages if m.get("kind") != "continuation"]


def status_text(event: CompactionViewEvent) -> str:
    count = len(shown(event.messages))
    if event.restored:
        return (
            f"Compaction {event.number}: these {count} messages were restored; the model "
            "sees them again."
        )
    if event.restorable:
        return (
            f"Compaction {event.number} replaced these {count} messages with a checkpoint; "
            "the model no longer sees them."
        )
    if event.merged_into:
        return (
            f"Compaction {event.number}'s checkpoint was merged into compaction "
            f"{event.merged_into}: restore that one first to restore this one."
        )
    return f"Compaction {event.number}'s checkpoint is no longer in the history."


def figures_text(event: CompactionViewEvent) -> str:
    if not event.restorable:
        return ""
    if not event.window:
        return "Brim cannot count the restored history until the window is known."
    return (
        f"Restored, the next request would be {event.tokens:,} of {event.window:,} tokens "
        f"(auto-compact at {event.compact_at:,})."
    )


def warning_text(event: CompactionViewEvent) -> str:
    return (
        f"That is past the auto-compact mark ({event.compact_at:,} tokens): the next request "
        "compacts the history again, asking one question per checkpoint section this time. "
        "Restore anyway?"
    )


def messages_html(messages: list[dict[str, Any]], assistant: str = "Assistant") -> str:
    parts = []
    for message in shown(messages):
        label = html.escape(role_label(message, assistant))
        body = html.escape(message_text(message)).replace("\n", "<br>")
        colour = theme.USER_ACCENT if message.get("role") == "user" else theme.ASSISTANT_ACCENT
        parts.append(
            f"<p style='margin-bottom:8px'><span style='color:{colour}; font-weight:600'>"
            f"{label}</span><br>{body}</p>"
        )
    return "".join(parts) or "<p>(no messages)</p>"


class CompactionView(QWidget):
    """The overlay's content for one compaction. `restore_requested(id, confirmed)` asks
    for the restore; the window sends it to the engine."""

    restore_requested = Signal(str, bool)

    def __init__(
        self,
        event: CompactionViewEvent,
        assistant: str = "Assistant",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("overlayContent")
        self.view_event = event
        self._assistant = assistant
        count = len(shown(event.messages))
        self.status = QLabel(status_text(event), objectName="railValue")
        self.status.setWordWrap(True)
        self.figures = QLabel(figures_text(event), objectName="railMuted")
        self.figures.setWordWrap(True)
        self.figures.setVisible(bool(self.figures.text()))
        self.restore_button = QPushButton(f"Restore {count} messages", objectName="restoreButton")
        self.restore_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.restore_button.setVisible(event.restorable)
        self.restore_button.clicked.connect(self._on_restore)

        self.confirm = QFrame(objectName="restoreWarning")
        self.warning = QLabel(warning_text(event), objectName="restoreWarningText")
        self.warning.setWordWrap(True)
        self.anyway_button = QPushButton("Restore anyway", objectName="restoreButton")
        self.keep_button = QPushButton("Keep the checkpoint", objectName="flat")
        self.anyway_button.clicked.connect(
            lambda: self.restore_requested.emit(self.view_event.compaction, True)
        )
        self.keep_button.clicked.connect(self._keep)
        confirm = QVBoxLayout(self.confirm)
        confirm.setContentsMargins(10, 8, 10, 8)
        confirm.addWidget(self.warning)
        confirm_buttons = QHBoxLayout()
        confirm_buttons.addWidget(self.anyway_button)
        confirm_buttons.addWidget(self.keep_button)
        confirm_buttons.addStretch(1)
        confirm.addLayout(confirm_buttons)
        self.confirm.hide()

        self.list_title = QLabel("REPLACED MESSAGES", objectName="sectionTitle")
        self.messages = QLabel(
            messages_html(event.messages, assistant), objectName="compactionMessages"
        )
        self.messages.setTextFormat(Qt.TextFormat.RichText)
        self.messages.setWordWrap(True)
        self.messages.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 4, 0)
        layout.setSpacing(8)
        layout.addWidget(self.status)
        layout.addWidget(self.figures)
        buttons = QHBoxLayout()
        buttons.addWidget(self.restore_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addWidget(self.confirm)
        layout.addWidget(self.list_title)
        layout.addWidget(self.messages)
        layout.addStretch(1)

    def _on_restore(self) -> None:
        if self.view_event.fits:
            self.restore_requested.emit(self.view_event.compaction, False)
            return
        self.restore_button.hide()
        self.confirm.show()

    def _keep(self) -> None:
        self.confirm.hide()
        self.restore_button.show()

    def text(self) -> str:
        """What the view says, for tests."""
        lines = [self.status.text(), self.figures.text()]
        if not self.confirm.isHidden():
            lines.append(self.warning.text())
        lines += [
            f"{role_label(m, self._assistant)}: {message_text(m)}"
            for m in shown(self.view_event.messages)
        ]
        return "\n".join(line for line in lines if line)
