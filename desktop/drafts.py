"""Unsent text, kept per conversation, so neither a crash nor a switch loses what was typed.

The composer's text is written to the settings file (atomically, as everything there is) a
moment after the typing stops, under the conversation it was typed in. Leaving a
conversation puts its draft away and empties the composer; opening one brings its draft
back. Sending empties the composer, which removes the draft; so does sending a `/new`, which
leaves the conversation it was typed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Slot

from desktop.ports import DraftsWindow

DRAFTS = "drafts"
SAVE_AFTER_MS = 700  # after the last keystroke
MAX_DRAFTS = 50  # the newest are kept


class Drafts(QObject):
    def __init__(
        self,
        window: DraftsWindow,
        load: Callable[[], dict[str, Any]],
        save: Callable[..., Any],
        current: Callable[[], str | None],
    ) -> None:
        """`window` holds the composer's text (`typed`, `put_draft`, `draft_edited`);
        `load` and `save` read and write the settings, `current` is the conversation open."""
        super().__init__(window.as_widget())
        self.window = window
        self._load = load
        self._save = save
        self._current = current
        self._owner: str | None = None  # the conversation the pending text was typed in
        self._quiet = False  # the text changes because Brim set it, not the user
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SAVE_AFTER_MS)
        self._timer.timeout.connect(self.save_now)
        window.draft_edited.connect(self._changed)

    def saved(self) -> dict[str, str]:
        drafts = self._load().get(DRAFTS)
        return {str(k): str(v) for k, v in drafts.items()} if isinstance(drafts, dict) else {}

    @Slot()
    def _changed(self) -> None:
        if self._quiet:
            return
        owner = self._current()
        if owner is None:
            return
        self._owner = owner
        self._timer.start()

    @Slot()
    def save_now(self) -> None:
        """Write the pending draft (if any) under the conversation it was typed in."""
        self._timer.stop()
        owner, self._owner = self._owner, None
        if owner is None:
            return
        text = self.window.typed()
        drafts = self.saved()
        drafts.pop(owner, None)
        if text.strip():
            drafts[owner] = text  # last: the newest
        self._save(**{DRAFTS: dict(list(drafts.items())[-MAX_DRAFTS:])})

    def leave(self, sent: str = "") -> None:
        """Another conversation is coming: put this one's draft away, empty the composer.

        `sent` is the text just sent from this conversation when the sending is what leaves
        it (a typed `/new`): that text is no draft of it, whether the composer still holds
        it or has been emptied already, and whatever of it was saved goes."""
        if sent and self.window.typed() == sent:
            self._owner = self._owner or self._current()
            self._set("")
        self.save_now()
        self._set("")

    def restore(self, conversation_id: str) -> None:
        """Bring back the draft of the conversation just opened (unless text is already
        typed: that belongs to the conversation now open and is saved as its draft)."""
        if self.window.typed().strip():
            self._changed()
            return
        text = self.saved().get(conversation_id, "")
        if text:
            self._set(text)

    def _set(self, text: str) -> None:
        self._quiet = True
        try:
            self.window.put_draft(text)
        finally:
            self._quiet = False
