"""What the user hears when the store cannot save (a full disk, an I/O error).

A message is saved before anything is sent, so a store that fails refuses the turn; the
session goes on (the next line is tried again, once space is free), and the failure is an
`error` event on the stream, not only a line on stderr as the process dies. What was saved
before is intact (each write is one transaction); a message that could not be saved is
given back (a WithdrawnEvent returns the text to the composer).
"""

from __future__ import annotations

from engine.events import AcceptedEvent, ErrorEvent, ErrorKind, EventSink, WithdrawnEvent
from engine.messages import Message
from engine.store import StoreError, StoreFull


def store_failure(
    exc: StoreError,
    message: Message,
    messages: list[Message],
    accepted: AcceptedEvent,
    emit: EventSink,
) -> None:
    """Emit the events for a turn the store stopped: `message` is the user's, `messages`
    the live history (whether the message made it in), `accepted` what took it."""
    saved = any(m.id == message.id for m in reversed(messages))
    text = str(exc)
    if not saved:
        text += " Your message was not saved; it is given back to send again."
    kind: ErrorKind = "disk_full" if isinstance(exc, StoreFull) else "store_error"
    emit(ErrorEvent(kind, text, data={"saved": saved}, retryable=saved))
    if not saved:
        emit(WithdrawnEvent(message.content, accepted.action, accepted.submission))
