"""How the agent loop tells the conversation something: a notice saved as a row and sent as
an event, with its kind and figures as data where a program may act on it."""

from __future__ import annotations

from dataclasses import dataclass

from engine.agent.types import Conversation
from engine.events import EventSink, NoticeEvent, NoticeKind, NoticeLevel
from engine.messages import notice


@dataclass
class Teller:
    conversation: Conversation
    sink: EventSink

    def notice(self, text: str, level: NoticeLevel = "info") -> None:
        """A plain notice: saved, and told."""
        self.conversation.append(notice(text, level))
        self.sink(NoticeEvent(level, text))

    def mark(
        self,
        kind: NoticeKind,
        text: str,
        details: dict[str, int | str],
        *,
        level: NoticeLevel = "info",
    ) -> None:
        """A notice a program can act on: its kind and figures travel with it (and with the
        saved row), never to be parsed back out of the text."""
        self.conversation.append(notice(text, level).with_meta(notice_kind=kind, **details))
        self.sink(NoticeEvent(level, text, kind=kind, details=details))
