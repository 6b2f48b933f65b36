"""Which submission holds a session: one at a time, from the moment it is accepted until it
ends. One accepted while the session is still starting (a local model loading) waits for the
start to finish before it runs, so a message typed during the load is sent once it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from engine.events import ErrorEvent


class Admission:
    def __init__(self) -> None:
        self._held = False
        self._started: asyncio.Future[bool] | None = None  # the last start's outcome

    @property
    def held(self) -> bool:
        """A submission holds the session (it may still be waiting for the start)."""
        return self._held

    @property
    def waiting(self) -> bool:
        """The submission that holds the session waits for the start to finish."""
        return self._held and self._started is not None and not self._started.done()

    @contextlib.asynccontextmanager
    async def starting(self) -> AsyncIterator[None]:
        """Around the session's start: submissions accepted meanwhile wait for its outcome."""
        started = self._started = asyncio.get_running_loop().create_future()
        try:
            yield
        except BaseException:
            started.set_result(False)
            raise
        started.set_result(True)

    @contextlib.asynccontextmanager
    async def hold(self, withdrawn: Callable[[], None] = lambda: None) -> AsyncIterator[bool]:
        """Hold the session for one submission; yields whether the session started (True
        when nobody started it: the turn then learns the window itself). `withdrawn` is
        called when the submission is cancelled while it waits for the start."""
        self._held = True
        try:
            try:
                started = True if self._started is None else await asyncio.shield(self._started)
            except asyncio.CancelledError:
                withdrawn()
                raise
            yield started
        finally:
            self._held = False


def busy_refusal(*, waiting: bool) -> ErrorEvent:
    """Why a submission is refused while another holds the session."""
    if waiting:
        text = "A message is already waiting for the model to load; send this one after it."
    else:
        text = "A turn is still running; wait or cancel it first."
    return ErrorEvent("busy", text)


async def await_quietly_cancelled(task: asyncio.Task[object]) -> None:
    """Await a task that `ChatSession.cancel()` reaches: a cancel of the task alone (Esc)
    ends it quietly; a cancel of the awaiting coroutine itself still propagates."""
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
