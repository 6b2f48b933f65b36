"""The sessions the desktop holds: one per open conversation, one of them shown.

A conversation whose answer is still streaming when the user opens another keeps its own
session, parked here; its events are not shown but kept (`SessionSlot.log`, after the
`snapshot` its view was last built from), so coming back draws what it would have drawn
meanwhile. The registry is keyed by the slot (a conversation id is known only once a new
conversation has been started) and found by conversation id, so one conversation is never
held by two sessions of this window: a switch to a parked one brings that one forward.

Each slot's fields carry a note of the thread that touches them: the engine loop's (the
session itself and the tasks that drive it) or the GUI thread's (what is shown).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.api import (
    AgentConfig,
    CompactionViewEvent,
    ContextEvent,
    ContextReportEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    EventSink,
    LearnProgressEvent,
    Message,
    ReasoningEvent,
    Receipt,
    RequestViewEvent,
    SessionControl,
    StateEvent,
    UsageReportEvent,
    ViewRequestEvent,
    WindowEvent,
    WorkStateEvent,
    default_model_path,
)

# What the sidebar marks beside a conversation: its answer is being written ("working"),
# it finished while another was shown ("unseen"), or nothing to say ("").
Activity = Literal["working", "unseen", ""]
WORKING: Activity = "working"
UNSEEN: Activity = "unseen"


@dataclass(frozen=True)
class SessionInfo:
    """What the window learns once a session has started, for its header and transcript."""

    conversation_id: str
    agent_name: str = ""
    model: str = ""
    history: list[Message] = field(default_factory=list)
    receipts: list[Receipt] = field(default_factory=list)  # the saved turns' receipts


def session_info(session: SessionControl) -> SessionInfo:
    name, model = describe_session(session)
    return SessionInfo(
        session.conversation_id,
        name,
        model,
        list(session.transcript()),
        list(session.turn_receipts()),
    )


def describe_session(session: SessionControl) -> tuple[str, str]:
    """The agent's name and the model for the header.

    The model the engine resolved (`session.window.model`) wins over the one the agent asked
    for; a GGUF path is shown by its file name.
    """
    window = session.window
    model = str((window.model if window is not None else "") or session.agent.model or "")
    if model.lower().endswith(".gguf"):
        model = Path(model).name
    return session.agent.name, model


def agent_model_label(agent: AgentConfig) -> str:
    """The model the header names before the engine has answered: the agent's model (a GGUF
    by its file name), or for an embedded agent without one the bundled model's name."""
    model = str(agent.model or "")
    if not model and agent.provider == "embedded":
        model = default_model_path() or "bundled model"
    if model.lower().endswith(".gguf"):
        model = Path(model).stem  # as the engine names it once loaded
    return model


@dataclass(frozen=True)
class Snapshot:
    """Crosses with the events: the view of an idle session taken just before a turn starts,
    so the events after it (the slot's log) are exactly what that turn added."""

    info: SessionInfo


STANDING = (StateEvent, WindowEvent, ContextEvent, ContextReportEvent)


def replayable(event: Event) -> bool:
    """Whether an event drawn while the conversation was away is drawn again on its return:
    rows, notices and the header's figures are; a view or dialog it opened is not opened a
    second time."""
    if isinstance(event, ContextReportEvent):
        return not event.snapshot
    return not isinstance(
        event,
        ViewRequestEvent
        | UsageReportEvent
        | CompactionViewEvent
        | LearnProgressEvent
        | RequestViewEvent,
    ) and not (isinstance(event, WorkStateEvent) and not event.cleared)


def no_session() -> ErrorEvent:
    return ErrorEvent("no_session", "No session is open.", retryable=True)


def did_not_start() -> ErrorEvent:
    return ErrorEvent("no_session", "The session did not start.", retryable=True)


def error_of(exc: BaseException, default_kind: str) -> ErrorEvent:
    """The error event for an exception that reached the bridge. Retry is offered when the
    exception says a second attempt may cure it (an engine error's `retryable`), or, for one
    that does not say, when the session could not start."""
    kind = kind_of(exc, default_kind)
    said = getattr(exc, "retryable", None)
    retryable = said if isinstance(said, bool) else kind == "startup"
    return ErrorEvent(kind, message_of(exc), retryable=retryable)


def kind_of(exc: BaseException, default: str) -> str:
    kind = getattr(exc, "kind", None)
    return kind if isinstance(kind, str) and kind else default


def message_of(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class Batch(list[str]):
    """Consecutive streamed pieces of one kind, crossing as one: the answer's text or, with
    `reasoning`, a thinking model's reasoning."""

    def __init__(self, first: str, *, reasoning: bool = False) -> None:
        super().__init__([first])
        self.reasoning = reasoning


Streamed = DeltaEvent | ReasoningEvent


class SessionSlot:
    """One session and everything the bridge keeps for it."""

    def __init__(self, key: int, emit: Callable[[int, object], None]) -> None:
        self.key = key
        self._emit = emit  # crosses to the GUI thread (a queued signal), with this slot's key
        self.forwarding = threading.Event()
        self.forwarding.set()
        self.coalesce_deltas = True
        self._batch_lock = threading.Lock()
        self._batch: Batch | None = None
        # Engine-loop state.
        self.session: SessionControl | None = None
        self.started: asyncio.Future[bool] | None = None
        self.opening: asyncio.Task[None] | None = None
        self.shown_conversation: str | None = None  # the conversation `opened` last told
        self.running: set[asyncio.Task[None]] = set()  # sends and retries running now
        self.cancels_seen = 0
        # GUI-thread state.
        self.factory: Callable[[EventSink], SessionControl] | None = None  # what made it
        self.conversation_id = ""
        self.in_flight = 0  # intents whose engine side has not finished
        self.turns = 0  # of them, the sends and retries: while any runs, it is working
        self.opened_ok = False
        self.snapshot: SessionInfo | None = None
        self.log: list[Event] = []
        # The latest of each event that sets a standing figure (the header's state, window
        # and context, the rail's report): drawn again first, as the log may not hold them.
        self.standing: dict[type, Event] = {}
        self.replay_pending = False  # brought forward; its view is drawn on the next pass
        self.activity: Activity = ""

    @property
    def busy(self) -> bool:
        return self.in_flight > 0

    # -- engine → GUI -----------------------------------------------------------------------

    def sink(self, event: Event) -> None:
        """The session's event sink; safe to call from any thread.

        Streamed text is coalesced before it crosses: consecutive deltas join one batch and
        only the batch's first delta posts a signal, so a fast engine cannot flood the GUI
        thread's queue with one event per token. Any other event closes the batch, which
        keeps every event in the order the engine emitted it."""
        if not self.forwarding.is_set():
            return
        if isinstance(event, (DeltaEvent, ReasoningEvent)) and self.coalesce_deltas:
            reasoning = isinstance(event, ReasoningEvent)
            with self._batch_lock:
                batch = self._batch
                if batch is not None and batch.reasoning == reasoning:
                    batch.append(event.text)
                    return
                batch = self._batch = Batch(event.text, reasoning=reasoning)
            self._emit(self.key, batch)
            return
        self.post(event)

    def post(self, item: Event | Snapshot) -> None:
        """Send one item across in order with the events (it closes a batch of deltas)."""
        with self._batch_lock:
            self._batch = None
        if self.forwarding.is_set():
            self._emit(self.key, item)

    def unbatch(self, batch: list[str]) -> Streamed:
        """A batch of streamed text as it reaches the GUI thread: one delta (or one piece of
        reasoning)."""
        with self._batch_lock:
            if self._batch is batch:
                self._batch = None  # later deltas start a new batch
            if isinstance(batch, Batch) and batch.reasoning:
                return ReasoningEvent("".join(batch))
            return DeltaEvent("".join(batch))

    # -- GUI side: what coming back draws -----------------------------------------------------

    def remember(self, event: Event) -> None:
        """Keep an event drawn after the snapshot (consecutive text is kept as one delta)."""
        if not replayable(event):
            return
        if isinstance(event, STANDING):
            self.standing[type(event)] = event
        if isinstance(event, (DeltaEvent, ReasoningEvent)) and self.log:
            last = self.log[-1]
            if type(last) is type(event):
                self.log[-1] = type(event)(last.text + event.text)  # type: ignore[attr-defined]
                return
        self.log.append(event)

    def rebuilt_from(self, info: SessionInfo) -> None:
        self.snapshot = info
        self.conversation_id = info.conversation_id
        self.log = []

    def view(self) -> list[Event]:
        """What coming back draws after the snapshot: the standing figures, then the log."""
        return [*self.standing.values(), *self.log]


class SessionRegistry:
    """The slots this window holds, and which one is shown."""

    def __init__(self) -> None:
        self._slots: dict[int, SessionSlot] = {}
        self._next = 0
        self.shown: SessionSlot | None = None

    def add(self, emit: Callable[[int, object], None]) -> SessionSlot:
        self._next += 1
        slot = SessionSlot(self._next, emit)
        self._slots[slot.key] = slot
        return slot

    def get(self, key: int) -> SessionSlot | None:
        return self._slots.get(key)

    def holding(self, conversation_id: str | None) -> SessionSlot | None:
        """The slot that has this conversation open, if any."""
        if not conversation_id:
            return None
        return next((s for s in self._slots.values() if s.conversation_id == conversation_id), None)

    def drop(self, slot: SessionSlot) -> None:
        self._slots.pop(slot.key, None)
        if self.shown is slot:
            self.shown = None

    def __iter__(self) -> Iterator[SessionSlot]:
        return iter(list(self._slots.values()))

    def __len__(self) -> int:
        return len(self._slots)
