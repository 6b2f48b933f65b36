"""The wall between the engine's asyncio thread and Qt's GUI thread, crossed in both directions.

Engine → GUI: the session's sink is called on the engine thread. It only emits a private
signal; a queued connection delivers it to this object's slot on the GUI thread, which
re-emits the public `event` signal there. Everything connected to `event` therefore runs on
the GUI thread no matter what kind of callable it is.

GUI → engine: intents (send, cancel, retry, switching conversation, close) are scheduled on
the engine loop; nothing here waits for a turn, so the window never blocks on the model.
Everything typed goes to the session's `send`, which routes it (engine/commands.py) and
says what it took (an AcceptedEvent) or why not; a report or a view is answered beside a
running turn, and a message sent meanwhile is refused by the session, not here.
The session itself is created on the engine thread too, because it may open resources
(SQLite) that belong to one thread. `call` runs any short engine-side function there (the
library's listing, a rename) and hands its result back on the GUI thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from desktop.engine_thread import EngineThread
from desktop.errors import EngineStopped
from engine.api import (
    AgentConfig,
    DeltaEvent,
    ErrorEvent,
    Event,
    EventSink,
    Message,
    Receipt,
    SessionControl,
    default_model_path,
)

# The session is driven only through `SessionControl` (engine/session/protocol.py), which
# the engine's ChatSession and the tests' fake both implement in full.
SessionFactory = Callable[[EventSink], SessionControl]


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


class EngineBridge(QObject):
    """Owns one session on the engine thread and speaks for it on the GUI thread."""

    event = Signal(object)  # an engine Event, always delivered on the GUI thread
    opened = Signal(object)  # SessionInfo, once `start()` has finished
    open_failed = Signal(str)  # the session could not be created or started (the why: an event)
    turn_finished = Signal()  # the send intent is over, whichever way it ended
    busy_changed = Signal(bool)

    _incoming = Signal(object)
    _opened_incoming = Signal(object)
    _open_failed_incoming = Signal(str)
    _turn_done_incoming = Signal()
    _result_incoming = Signal(int, object, object)

    def __init__(self, engine: EngineThread, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._forwarding = threading.Event()
        self._forwarding.set()
        # Streamed text waiting to cross to the GUI thread (see `sink`).
        self.coalesce_deltas = True
        self._batch_lock = threading.Lock()
        self._batch: list[str] | None = None
        # Engine-loop state: touched only by coroutines and callbacks running on that loop.
        self._session: SessionControl | None = None
        self._started: asyncio.Future[bool] | None = None
        self._opening: asyncio.Task[None] | None = None
        self._shown_conversation: str | None = None  # the conversation `opened` last told
        # The sends and retries running now: a close waits for them, and a cancel while the
        # model still loads drops them (they have not reached a turn yet).
        self._running: set[asyncio.Task[None]] = set()
        self._cancels_seen = 0  # the last cancel that reached the loop (see `cancel`)
        # GUI-thread state.
        self._busy = False
        self._in_flight = 0  # intents whose engine side has not finished
        self._replacing = False  # a reopen or a switch of conversation is in flight
        self._cancels = 0  # cancels asked for so far
        self._factory: SessionFactory | None = None
        self._opened_ok = False
        self._callbacks: dict[int, tuple[Callable[[Any], None], Callable[[str], None] | None]] = {}
        self._next_call = 0
        self._incoming.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._opened_incoming.connect(self._deliver_opened, Qt.ConnectionType.QueuedConnection)
        self._open_failed_incoming.connect(
            self._deliver_open_failed, Qt.ConnectionType.QueuedConnection
        )
        self._turn_done_incoming.connect(
            self._deliver_turn_done, Qt.ConnectionType.QueuedConnection
        )
        self._result_incoming.connect(self._deliver_result, Qt.ConnectionType.QueuedConnection)

    @property
    def busy(self) -> bool:
        """An intent is in flight: a send (waiting for the model to load, or streaming), a
        retry, or a switch of conversation or agent."""
        return self._busy

    def sink(self, event: Event) -> None:
        """The engine's event sink; safe to call from any thread.

        Streamed text is coalesced before it crosses: consecutive deltas join one batch and
        only the batch's first delta posts a signal, so a fast engine cannot flood the GUI
        thread's queue with one event per token. Any other event closes the batch, which
        keeps every event in the order the engine emitted it."""
        if not self._forwarding.is_set():
            return
        if isinstance(event, DeltaEvent) and self.coalesce_deltas:
            with self._batch_lock:
                batch = self._batch
                if batch is not None:
                    batch.append(event.text)
                    return
                batch = self._batch = [event.text]
            self._incoming.emit(batch)
            return
        with self._batch_lock:
            self._batch = None
        self._incoming.emit(event)

    # -- intents (called on the GUI thread) -------------------------------------------------

    @property
    def started(self) -> bool:
        """The current session opened (its window may still be unknown)."""
        return self._opened_ok

    def open(self, factory: SessionFactory) -> concurrent.futures.Future[None] | None:
        """Create the session on the engine thread and start it (loads the model)."""
        self._factory = factory
        self._opened_ok = False
        return self._submit(self._open(factory))

    def reopen(self, factory: SessionFactory | None = None) -> bool:
        """Close the current session (if any) and open another: a different agent, or the
        same factory again after a failed start. False while a turn runs."""
        factory = factory or self._factory
        if self._busy or factory is None:
            return False
        self._factory = factory
        self._opened_ok = False
        # Nothing is sent to a session that is being replaced.
        return self._start_intent(self._reopen(factory), replacing=True)

    def switch_conversation(self, conversation_id: str | None) -> bool:
        """Open a saved conversation of the same agent, or (None) a new one, keeping the
        engine loaded. False while a turn runs."""
        if self._busy:
            return False
        # A message typed meanwhile waits in the composer for the new conversation.
        return self._start_intent(self._switch(conversation_id), replacing=True)

    def retry(self) -> bool:
        """The banner's Retry: reopen a session that failed to start, else ask the session
        to probe again and re-run the failed turn."""
        if self._busy:
            return False
        if not self._opened_ok:
            return self.reopen()
        return self._start_intent(self._retry())

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
        """`call` with the current session as the argument (an error when none is open)."""

        def run() -> Any:
            if self._session is None:
                raise RuntimeError("No session is open.")
            return fn(self._session)

        return self.call(run, on_result, on_error)

    def send(self, text: str) -> bool:
        """Hand what was typed to the session, even while a turn runs: the session decides
        what it is and whether it is taken now, and says so in events. False (nothing sent)
        while another conversation or agent is opening, or when the engine is gone."""
        if self._replacing:
            return False
        return self._start_intent(self._send(text, self._cancels))

    def cancel(self) -> None:
        """Cancel the running turn (or the one waiting for the model); harmless when idle.
        A send made before it that has not begun on the engine loop yet is dropped too: it
        never reaches the session, and its text stays in the composer."""
        self._cancels += 1
        cancels = self._cancels
        with contextlib.suppress(EngineStopped):
            self._engine.call_soon(lambda: self._cancel_on_loop(cancels))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel any turn, close the session, stop forwarding events; blocks up to `timeout`."""
        future = self._submit(self._close())
        if future is not None:
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                future.result(timeout)
        self._forwarding.clear()

    # -- engine-loop side -------------------------------------------------------------------

    async def _open(self, factory: SessionFactory) -> None:
        self._started = asyncio.get_running_loop().create_future()
        self._opening = asyncio.current_task()
        try:
            session = factory(self.sink)
            self._session = session
            await session.start()
            info = session_info(session)
        except asyncio.CancelledError:
            self._started.cancel()
            raise
        except Exception as exc:  # a broken agent or a dead engine: say so, keep the window
            message = _message_of(exc)
            self.sink(_error_of(exc, "startup"))
            self._started.set_result(False)
            if self._forwarding.is_set():
                self._open_failed_incoming.emit(message)
            return
        self._started.set_result(True)
        self._shown_conversation = info.conversation_id
        if self._forwarding.is_set():
            self._opened_incoming.emit(info)

    async def _send(self, text: str, cancels_before: int) -> None:
        running = asyncio.current_task()
        assert running is not None
        self._running.add(running)
        try:
            if self._cancels_seen > cancels_before:
                return  # cancelled before it began
            session = self._session
            if session is None:
                failed = self._started is not None  # a session was made, and failed
                self.sink(_did_not_start() if failed else _no_session())
                return
            await session.send(text)  # a message sent while the model loads waits in it
            self._tell_if_switched(session)  # `/new` opened another conversation
        except asyncio.CancelledError:
            pass  # cancelled while waiting for the model to load: nothing was sent
        except Exception as exc:  # send() should never raise; if it does, show it, not crash
            self.sink(_error_of(exc, "internal"))
        finally:
            self._running.discard(running)
            if self._forwarding.is_set():
                self._turn_done_incoming.emit()

    def _tell_if_switched(self, session: SessionControl) -> None:
        if session is not self._session or self._shown_conversation is None:
            return
        if session.conversation_id != self._shown_conversation:
            self._shown_conversation = session.conversation_id
            if self._forwarding.is_set():
                self._opened_incoming.emit(session_info(session))

    async def _reopen(self, factory: SessionFactory) -> None:
        try:
            await self._close()
            await self._open(factory)
        finally:
            if self._forwarding.is_set():
                self._turn_done_incoming.emit()

    async def _switch(self, conversation_id: str | None) -> None:
        try:
            session = self._session
            if session is None:
                self.sink(_no_session())
                return
            try:
                await session.open_conversation(conversation_id)
                info = session_info(session)
            except Exception as exc:  # an unknown or unreadable conversation: say so
                self.sink(_error_of(exc, "startup"))
                return
            self._shown_conversation = info.conversation_id
            if self._forwarding.is_set():
                self._opened_incoming.emit(info)
        finally:
            if self._forwarding.is_set():
                self._turn_done_incoming.emit()

    async def _retry(self) -> None:
        running = asyncio.current_task()
        assert running is not None
        self._running.add(running)
        try:
            session = self._session
            if session is None:
                self.sink(_no_session())
            else:
                await session.retry()
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self.sink(_error_of(exc, "internal"))
        finally:
            self._running.discard(running)
            if self._forwarding.is_set():
                self._turn_done_incoming.emit()

    async def _call(self, token: int, fn: Callable[[], Any]) -> None:
        try:
            result, error = fn(), None
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            result, error = None, _message_of(exc)
        if self._forwarding.is_set():
            self._result_incoming.emit(token, result, error)

    def _cancel_on_loop(self, cancels: int) -> None:
        self._cancels_seen = max(self._cancels_seen, cancels)
        if self._session is not None:
            self._session.cancel()
        started = self._started
        if started is None or not started.done():
            for running in list(self._running):
                running.cancel()  # still waiting for the model: no turn began; drop it

    async def _close(self) -> None:
        opening = self._opening
        if opening is not None and not opening.done():
            opening.cancel()  # still loading the model: stop loading
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await opening
        session, self._session = self._session, None
        if session is None:
            return
        session.cancel()
        if self._running:
            await asyncio.wait(list(self._running), timeout=2.0)
        self._shown_conversation = None
        await session.close()

    # -- GUI-thread side --------------------------------------------------------------------

    def _submit(self, coro: Any) -> concurrent.futures.Future[Any] | None:
        try:
            return self._engine.submit(coro)
        except EngineStopped:
            return None

    def _start_intent(self, coro: Any, *, replacing: bool = False) -> bool:
        """Schedule an intent whose engine side ends with `_turn_done_incoming`; busy until
        every such intent has ended."""
        if self._submit(coro) is None:
            return False
        self._in_flight += 1
        self._replacing = self._replacing or replacing
        self._set_busy(True)
        return True

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    @Slot(object)
    def _deliver(self, event: Event | list[str]) -> None:
        if isinstance(event, list):  # a batch of streamed text
            with self._batch_lock:
                if self._batch is event:
                    self._batch = None  # later deltas start a new batch
                text = "".join(event)
            event = DeltaEvent(text)
        self.event.emit(event)

    @Slot(object)
    def _deliver_opened(self, info: SessionInfo) -> None:
        self._opened_ok = True
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

    @Slot(str)
    def _deliver_open_failed(self, message: str) -> None:
        self.open_failed.emit(message)

    @Slot()
    def _deliver_turn_done(self) -> None:
        self._in_flight = max(0, self._in_flight - 1)
        if self._in_flight:
            return  # a report asked beside a running turn ended; the turn goes on
        self._replacing = False
        self._set_busy(False)
        self.turn_finished.emit()


def _no_session() -> ErrorEvent:
    return ErrorEvent("no_session", "No session is open.", retryable=True)


def _did_not_start() -> ErrorEvent:
    return ErrorEvent("no_session", "The session did not start.", retryable=True)


def _error_of(exc: BaseException, default_kind: str) -> ErrorEvent:
    """The error event for an exception that reached the bridge. Retry is offered when the
    exception says a second attempt may cure it (an engine error's `retryable`), or, for one
    that does not say, when the session could not start."""
    kind = _kind_of(exc, default_kind)
    said = getattr(exc, "retryable", None)
    retryable = said if isinstance(said, bool) else kind == "startup"
    return ErrorEvent(kind, _message_of(exc), retryable=retryable)


def _kind_of(exc: BaseException, default: str) -> str:
    kind = getattr(exc, "kind", None)
    return kind if isinstance(kind, str) and kind else default


def _message_of(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
