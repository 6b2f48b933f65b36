"""The one background thread that owns the engine's asyncio loop.

The engine is asyncio (httpx, the ollama client) and Qt owns the GUI thread, so the engine
gets a thread of its own. `asyncio.run` drives the loop: on stop it cancels every task still
pending and waits for them, shuts down async generators and the default executor, and only
then does the thread end, so a stopped engine leaves nothing running behind it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from desktop.errors import EngineStopped

T = TypeVar("T")


class EngineThread:
    """Start it, hand it coroutines from any thread, stop it once."""

    def __init__(self, name: str = "brim-engine") -> None:
        self._name = name
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._accepting = False

    @property
    def running(self) -> bool:
        return self._accepting

    @property
    def thread_id(self) -> int | None:
        """The engine thread's ident, so tests can check where engine code ran."""
        return self._thread.ident if self._thread else None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the engine thread was already started")
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the engine loop; the returned future is safe to poll from Qt."""
        with self._lock:
            if not self._accepting or self._loop is None:
                coro.close()  # never awaited on purpose: say so quietly, not as a warning
                raise EngineStopped("the engine thread is not running")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Run a plain function on the engine thread (for sync engine calls such as cancel)."""
        with self._lock:
            if not self._accepting or self._loop is None:
                raise EngineStopped("the engine thread is not running")
            self._loop.call_soon_threadsafe(callback)

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel what is pending, wait for it to unwind, end the thread. True when it ended."""
        with self._lock:
            loop, stop_event = self._loop, self._stop_event
            self._accepting = False
        if self._thread is None:
            return True
        if loop is not None and stop_event is not None and not loop.is_closed():
            # The loop may close between the check and the call; then it is stopped anyway.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop_event.set)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._ready.set()  # never leave start() waiting, even if the loop failed to start

    async def _main(self) -> None:
        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._stop_event = asyncio.Event()
            self._accepting = True
        self._ready.set()
        await self._stop_event.wait()
