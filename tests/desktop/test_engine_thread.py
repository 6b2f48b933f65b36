"""The engine thread: runs coroutines off the GUI thread and stops without leaving work behind."""

import asyncio
import threading

import pytest

from desktop.engine_thread import EngineThread
from desktop.errors import EngineStopped


def test_a_submitted_coroutine_runs_on_the_engine_thread():
    engine = EngineThread()
    engine.start()
    try:

        async def where() -> int:
            return threading.get_ident()

        assert engine.submit(where()).result(2) == engine.thread_id != threading.get_ident()
    finally:
        assert engine.stop()


def test_stopping_cancels_pending_work_and_waits_for_it_to_unwind():
    engine = EngineThread()
    engine.start()
    unwound = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            unwound.set()

    future = engine.submit(forever())
    assert engine.stop(timeout=5)
    assert unwound.is_set()
    assert future.cancelled()


def test_an_intent_after_stop_is_refused_without_an_unawaited_coroutine():
    engine = EngineThread()
    engine.start()
    engine.stop()

    async def late() -> None:
        pass

    with pytest.raises(EngineStopped):
        engine.submit(late())  # pytest turns a "never awaited" warning into a failure
    with pytest.raises(EngineStopped):
        engine.call_soon(lambda: None)
