"""The answer being written, kept on disk while it streams, so a crash does not lose it.

A message is stored once it is whole (or cut short by a cancel or an engine fault, then marked
partial). A process killed mid-answer (kill -9, a power cut, a native crash) gets neither: the
reopened conversation would end at the user's message and say nothing of the answer the user
watched arrive. So while an answer streams, its text so far is written, at most every
`DRAFT_EVERY_S`, to a small file in the conversation's folder; storing any assistant message
drops it. A draft still there when the conversation is opened again was cut by the process
ending: it becomes the partial answer, followed by a notice that says so.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from engine.atomic import atomic_write_text
from engine.events import DeltaEvent, Event, StateEvent
from engine.messages import Message, assistant, notice

log = logging.getLogger(__name__)

DRAFT_FILE = "answer-draft.json"
DRAFT_EVERY_S = 0.5
INTERRUPTED = (
    "The answer above was interrupted: Brim stopped while it was being written, and this is "
    "as far as it got."
)


class AnswerDraft:
    """The streaming answer's text so far, written to `folder() / DRAFT_FILE` as it grows."""

    def __init__(self, folder: Callable[[], Path], *, every_s: float = DRAFT_EVERY_S) -> None:
        self._folder = folder
        self._every_s = every_s
        self._parts: list[str] = []
        self._written_at = 0.0
        self._dirty = False
        self._answering = False  # within one answer's text (a thought midway keeps it)
        self._state = ""

    def _path(self) -> Path:
        return self._folder() / DRAFT_FILE

    def observe(self, event: Event) -> None:
        """Follow the session's events: an answer's first token starts a new draft, each
        delta grows it. Never raises (a draft that cannot be written costs only itself)."""
        if isinstance(event, StateEvent):
            # A model that thinks midway goes back to "streaming" within the same answer.
            midway = self._answering and self._state == "thinking"
            if event.state == "streaming" and not midway:
                self._parts = []
            if event.state != "thinking":
                self._answering = event.state == "streaming"
            self._state = event.state
        elif isinstance(event, DeltaEvent):
            self._parts.append(event.text)
            self._dirty = True
            now = time.monotonic()
            if now - self._written_at >= self._every_s:
                self._written_at = now
                self._write()

    def _write(self) -> None:
        try:
            path = self._path()
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"text": "".join(self._parts)}))
            self._dirty = False
        except OSError:
            log.warning("could not keep the answer's draft", exc_info=True)

    def drop(self) -> None:
        """The answer is stored (whole or partial): its draft has no more use."""
        self._parts = []
        self._dirty = False
        self._answering = False
        try:
            self._path().unlink(missing_ok=True)
        except OSError:
            log.warning("could not remove the answer's draft", exc_info=True)

    def recover(self, history: list[Message]) -> list[Message]:
        """The messages a draft left by an ended process stands for (the partial answer and
        a notice), to append to `history`; none when there is no draft, or when the history
        already ends with that answer (stored just before the process ended)."""
        path = self._path()
        try:
            text = str(json.loads(path.read_text(encoding="utf-8")).get("text", ""))
        except FileNotFoundError:
            return []
        except (OSError, ValueError, AttributeError):
            log.warning("an answer's draft could not be read; it is dropped", exc_info=True)
            text = ""
        self.drop()
        last = history[-1] if history else None
        if not text.strip() or (
            last is not None and last.role == "assistant" and last.content.startswith(text)
        ):
            return []
        return [assistant(text).with_meta(partial=True), notice(INTERRUPTED, "warning")]
