"""The wall between the engine's asyncio thread and Qt's GUI thread, crossed in both directions.

Engine → GUI: each session's sink is called on the engine thread. It only emits a private
signal; a queued connection delivers it to this object's slot on the GUI thread, which
re-emits the public `event` signal there for the conversation shown. Everything connected to
`event` therefore runs on the GUI thread no matter what kind of callable it is.

One session per open conversation (desktop/session_slot.py; the engine-loop side of each is
desktop/slot_tasks.py): a conversation whose answer is still being written when the user
opens another keeps its session and goes on; its events are kept, not shown, and drawn again
when it is shown once more. `activity` tells the sidebar which conversations are working and
which finished unseen. Everything else here speaks for the session shown: `busy`, `send`,
`cancel`, `retry`, `session_call`.

GUI → engine: intents (send, cancel, retry, switching conversation, close) are scheduled on
the engine loop; nothing here waits for a turn, so the window never blocks on the model.
Everything typed goes to the session's `send`, which routes it (engine/commands.py) and
says what it took (an AcceptedEvent) or why not. The sessions are created on the engine
thread too, because they may open resources (SQLite) that belong to one thread. `call` runs
any short engine-side function there and hands its result back on the GUI thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from desktop import slot_tasks as tasks
from desktop.engine_thread import EngineThread
from desktop.errors import EngineStopped
from desktop.session_slot import (
    UNSEEN,
    WORKING,
    Activity,
    SessionInfo,
    SessionRegistry,
    SessionSlot,
    Snapshot,
    agent_model_label,
    describe_session,
    message_of,
    session_info,
)
from engine.api import (
    Event,
    SessionControl,
)

# The session is driven only through `SessionControl` (engine/session/protocol.py), which
# the engine's ChatSession and the UI bench's streaming session both implement in full.
SessionFactory = tasks.SessionFactory

__all__ = [
    "EngineBridge",
    "SessionFactory",
    "SessionInfo",
    "agent_model_label",
    "describe_session",
    "session_info",
]


class EngineBridge(QObject):
    """Holds the window's sessions on the engine thread and speaks for them on the GUI thread."""

    event = Signal(object)  # an engine Event of the shown conversation, on the GUI thread
    opened = Signal(object)  # SessionInfo, once a conversation is shown (started or back)
    open_failed = Signal(str)  # the session could not be created or started (the why: an event)
    turn_finished = Signal()  # the shown session's intents are over, whichever way they ended
    busy_changed = Signal(bool)
    activity = Signal(str, str)  # conversation id, Activity: the sidebar's marker
    background_finished = Signal(str)  # a conversation not shown finished its turn

    _incoming = Signal(int, object)
    _opened_incoming = Signal(int, object)
    _open_failed_incoming = Signal(int, str)
    _turn_done_incoming = Signal(int, bool)  # the slot's key, and whether it was a turn
    _result_incoming = Signal(int, object, object)

    def __init__(self, engine: EngineThread, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._slots = SessionRegistry()
        self._coalesce = True
        self._closing = False
        self._last_close: concurrent.futures.Future[None] | None = None
        # GUI-thread state.
        self._busy = False
        self._replacing = False  # a reopen or a switch of conversation is in flight
        self._cancels = 0  # cancels asked for so far
        self.replaying = False  # events drawn again for a conversation brought back
        self._callbacks: dict[int, tuple[Callable[[Any], None], Callable[[str], None] | None]] = {}
        self._next_call = 0
        queued = Qt.ConnectionType.QueuedConnection
        self._out = tasks.Crossings(
            self._opened_incoming.emit,
            self._open_failed_incoming.emit,
            self._turn_done_incoming.emit,
        )
        self._incoming.connect(self._deliver, queued)
        self._opened_incoming.connect(self._deliver_opened, queued)
        self._open_failed_incoming.connect(self._deliver_open_failed, queued)
        self._turn_done_incoming.connect(self._deliver_turn_done, queued)
        self._result_incoming.connect(self._deliver_result, queued)

    @property
    def busy(self) -> bool:
        """An intent of the shown conversation is in flight: a send (waiting for the model
        to load, or streaming), a retry, or a switch of conversation or agent."""
        return self._busy

    @property
    def coalesce_deltas(self) -> bool:
        return self._coalesce

    @coalesce_deltas.setter
    def coalesce_deltas(self, value: bool) -> None:
        self._coalesce = value
        for slot in self._slots:
            slot.coalesce_deltas = value

    @property
    def _session(self) -> SessionControl | None:
        """The shown conversation's session (engine-loop side; for tests)."""
        shown = self._slots.shown
        return shown.session if shown is not None else None

    @property
    def started(self) -> bool:
        """The shown session opened (its window may still be unknown)."""
        shown = self._slots.shown
        return shown is not None and shown.opened_ok

    @property
    def opening(self) -> bool:
        """A reopen or a switch of conversation is in flight (sends wait for it)."""
        return self._replacing

    def holds(self, conversation_id: str | None) -> bool:
        """A session of this window has the conversation open (shown or going on unseen)."""
        return self._slots.holding(conversation_id) is not None

    def activity_of(self, conversation_id: str) -> Activity:
        slot = self._slots.holding(conversation_id)
        return slot.activity if slot is not None else ""

    def let_go(self, conversation_id: str) -> Callable[[], Awaitable[None]]:
        """Close the session that holds a conversation not shown (a deleted one), cancelling
        its turn. Returns what waits for that on the engine thread (for `call`, before the
        conversation's rows go)."""
        slot = self._slots.holding(conversation_id)
        future = None
        if slot is not None and slot is not self._slots.shown:
            self._retire(slot)
            future = self._last_close

        async def closed() -> None:
            if future is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wrap_future(future)

        return closed

    def sessions(self) -> int:
        """How many sessions this window holds now."""
        return len(self._slots)

    # -- intents (called on the GUI thread) -------------------------------------------------

    def open(self, factory: SessionFactory) -> concurrent.futures.Future[None] | None:
        """Create a session on the engine thread, start it (loads the model) and show it."""
        slot = self._new_slot(factory)
        self._show(slot)
        return self._submit(tasks.open_session(self._out, slot, factory))

    def reopen(self, factory: SessionFactory | None = None) -> bool:
        """Close the shown session (if any) and open another in its place: a different
        agent, or the same factory again after a failed start. False while a turn runs."""
        old = self._slots.shown
        factory = factory or (old.factory if old is not None else None)
        if self._busy or factory is None:
            return False
        if old is not None:  # closed before the new one opens (it may be the same conversation)
            self._set_activity(old, "")
            self._slots.drop(old)
            old.conversation_id = ""
        slot = self._new_slot(factory)
        self._show(slot)
        # Nothing is sent to a session that is being replaced.
        return self._start_intent(slot, tasks.reopen(self._out, old, slot, factory), replacing=True)

    def open_beside(self, factory: SessionFactory) -> bool:
        """Show a new session while the shown one's turn goes on unseen (an idle one is
        closed, as `reopen` does)."""
        old = self._slots.shown
        if old is None or not old.busy:
            return self.reopen(factory)
        self._park(old)
        slot = self._new_slot(factory)
        self._show(slot)
        return self._start_intent(
            slot, tasks.reopen(self._out, None, slot, factory), replacing=True
        )

    def switch_conversation(self, conversation_id: str | None) -> bool:
        """Show a conversation: the session that holds it already (one going on unseen), or
        (when the shown session is idle) the shown session opened on it, keeping the engine
        loaded; None: a new conversation. False when the shown session's turn runs and no
        session holds it (a new session is the caller's: `open_beside`)."""
        held = self._slots.holding(conversation_id)
        shown = self._slots.shown
        if held is not None and held is not shown:
            self._bring_forward(held)
            return True
        if self._busy or shown is None:
            return False
        # A message typed meanwhile waits in the composer for the new conversation.
        return self._start_intent(
            shown, tasks.switch(self._out, shown, conversation_id), replacing=True
        )

    def retry(self) -> bool:
        """The banner's Retry: reopen a session that failed to start, else ask the session
        to probe again and re-run the failed turn."""
        shown = self._slots.shown
        if self._busy or shown is None:
            return False
        if not shown.opened_ok:
            return self.reopen()
        return self._start_intent(shown, tasks.retry(self._out, shown), turn=True)

    def call(
        self,
        fn: Callable[[], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None] | None = None,
    ) -> bool:
        """Run `fn()` on the engine thread; `on_result(value)` (or `on_error(message)`) runs
        on the GUI thread. An awaitable that `fn` returns (a coroutine function's call) is
        awaited there first, so engine I/O such as a probe can run this way too."""
        self._next_call += 1
        token = self._next_call
        self._callbacks[token] = (on_result, on_error)
        if self._submit(self._call(token, fn)) is None:
            self._callbacks.pop(token, None)
            return False
        return True

    def session_call(
        self,
        fn: Callable[[SessionControl], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None] | None = None,
    ) -> bool:
        """`call` with the shown session as the argument (an error when none is open)."""
        shown = self._slots.shown

        def run() -> Any:
            if shown is None or shown.session is None:
                raise RuntimeError("No session is open.")
            return fn(shown.session)

        return self.call(run, on_result, on_error)

    def send(self, text: str) -> bool:
        """Hand what was typed to the shown session, even while a turn runs: the session
        decides what it is and whether it is taken now, and says so in events. False (nothing
        sent) while another conversation or agent is opening, or when the engine is gone."""
        shown = self._slots.shown
        if self._replacing or shown is None:
            return False
        return self._start_intent(
            shown, tasks.send(self._out, shown, text, self._cancels), turn=True
        )

    def cancel(self) -> None:
        """Cancel the shown conversation's turn (or the one waiting for the model); harmless
        when idle. A send made before it that has not begun on the engine loop yet is dropped
        too: it never reaches the session, and its text stays in the composer."""
        shown = self._slots.shown
        if shown is None:
            return
        self._cancels += 1
        cancels = self._cancels
        with contextlib.suppress(EngineStopped):
            self._engine.call_soon(lambda: tasks.cancel_on_loop(shown, cancels))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel every turn, close every session, stop forwarding; blocks up to `timeout`."""
        self._closing = True
        slots = list(self._slots)

        async def close_all() -> None:
            await asyncio.gather(*(tasks.close(slot) for slot in slots), return_exceptions=True)

        future = self._submit(close_all())
        if future is not None:
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                future.result(timeout)
        for slot in slots:
            slot.forwarding.clear()

    # -- which session is shown (GUI thread) ---------------------------------------------------

    def _new_slot(self, factory: SessionFactory) -> SessionSlot:
        slot = self._slots.add(self._incoming.emit)
        slot.coalesce_deltas = self._coalesce
        slot.factory = factory
        return slot

    def _show(self, slot: SessionSlot) -> None:
        self._slots.shown = slot
        self._replacing = False
        self._set_busy(slot.busy)
        self._set_activity(slot, WORKING if slot.turns else "")

    def _park(self, slot: SessionSlot) -> None:
        """The shown session goes on unseen."""
        slot.replay_pending = False
        self._set_activity(slot, WORKING)

    def _bring_forward(self, slot: SessionSlot) -> None:
        """Show a session that went on unseen. The one shown now goes on unseen if its turn
        runs, and is closed if not. The view is drawn on the next pass of the event loop,
        once the window has cleared what it showed; events that arrive until then wait in
        the slot's log."""
        old = self._slots.shown
        if old is not None and old is not slot:
            if old.busy:
                self._park(old)
            else:
                self._retire(old)
        slot.replay_pending = True
        self._show(slot)
        QTimer.singleShot(0, lambda: self._replay(slot))

    def _replay(self, slot: SessionSlot) -> None:
        if not slot.replay_pending or self._slots.shown is not slot:
            return
        slot.replay_pending = False
        if slot.snapshot is None:
            return
        self.opened.emit(slot.snapshot)
        self.replaying = True
        try:
            for event in slot.view():
                self.event.emit(event)
        finally:
            self.replaying = False
        if not slot.busy:
            self.turn_finished.emit()

    def _retire(self, slot: SessionSlot) -> None:
        """Close a session that is no longer shown and has nothing running."""
        self._slots.drop(slot)
        self._set_activity(slot, "")
        slot.conversation_id = ""
        self._last_close = self._submit(tasks.close(slot))

    def _set_activity(self, slot: SessionSlot, activity: Activity) -> None:
        if slot.activity == activity:
            return
        slot.activity = activity
        if slot.conversation_id:
            self.activity.emit(slot.conversation_id, activity)

    async def _call(self, token: int, fn: Callable[[], Any]) -> None:
        try:
            result, error = fn(), None
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            result, error = None, message_of(exc)
        if not self._closing:
            self._result_incoming.emit(token, result, error)

    # -- GUI-thread side --------------------------------------------------------------------

    def _submit(self, coro: Any) -> concurrent.futures.Future[Any] | None:
        try:
            return self._engine.submit(coro)
        except EngineStopped:
            return None

    def _start_intent(
        self, slot: SessionSlot, coro: Any, *, replacing: bool = False, turn: bool = False
    ) -> bool:
        """Schedule an intent whose engine side ends with `_turn_done_incoming`; the slot is
        busy until every such intent has ended, and working while a send or retry runs."""
        if self._submit(coro) is None:
            return False
        slot.in_flight += 1
        slot.turns += turn
        if slot is self._slots.shown:
            self._replacing = self._replacing or replacing
            self._set_busy(True)
        if turn:
            self._set_activity(slot, WORKING)
        return True

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    @Slot(int, object)
    def _deliver(self, key: int, item: Event | Snapshot | list[str]) -> None:
        slot = self._slots.get(key)
        if slot is None:
            return  # a session closed meanwhile
        if isinstance(item, Snapshot):
            slot.rebuilt_from(item.info)
            return
        event = slot.unbatch(item) if isinstance(item, list) else item
        slot.remember(event)
        if slot is self._slots.shown and not slot.replay_pending:
            self.event.emit(event)

    @Slot(int, object)
    def _deliver_opened(self, key: int, info: SessionInfo) -> None:
        slot = self._slots.get(key)
        if slot is None:
            return
        slot.opened_ok = True
        before = slot.conversation_id
        slot.rebuilt_from(info)
        if before != info.conversation_id and slot.activity:
            if before:
                self.activity.emit(before, "")  # the marker moves with the session
            self.activity.emit(info.conversation_id, slot.activity)
        if slot is not self._slots.shown:
            return
        # The new conversation is open: what is typed now goes to it (the intent that opened
        # it only has to say it is done).
        self._replacing = False
        self.opened.emit(info)

    @Slot(int, object, object)
    def _deliver_result(self, token: int, result: object, error: object) -> None:
        on_result, on_error = self._callbacks.pop(token, (None, None))
        if error is not None:
            if on_error is not None:
                on_error(str(error))
        elif on_result is not None:
            on_result(result)

    @Slot(int, str)
    def _deliver_open_failed(self, key: int, message: str) -> None:
        if self._slots.shown is self._slots.get(key) is not None:
            self.open_failed.emit(message)

    @Slot(int, bool)
    def _deliver_turn_done(self, key: int, turn: bool) -> None:
        slot = self._slots.get(key)
        if slot is None:
            return
        slot.in_flight = max(0, slot.in_flight - 1)
        slot.turns = max(0, slot.turns - turn)
        if slot.in_flight:
            return  # a report asked beside a running turn ended; the turn goes on
        if slot is not self._slots.shown:
            self._set_activity(slot, UNSEEN)
            if slot.conversation_id:
                self.background_finished.emit(slot.conversation_id)
            return
        self._set_activity(slot, "")
        self._replacing = False
        self._set_busy(False)
        if not slot.replay_pending:  # else the replay says so once it has drawn the turn
            self.turn_finished.emit()
