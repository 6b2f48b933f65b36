"""The engine-loop side of one session slot (desktop/session_slot.py): opening, sending,
retrying, switching and closing its session, and saying how each went back across the wall.

Each coroutine runs on the engine thread and ends by posting what the GUI thread must learn
through `Crossings` (the bridge's queued signals, desktop/bridge.py), tagged with the slot's
key, so a session that is not shown goes on exactly as the shown one does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from desktop.session_slot import (
    SessionInfo,
    SessionSlot,
    Snapshot,
    did_not_start,
    error_of,
    message_of,
    no_session,
    session_info,
)
from engine.api import EventSink, SessionControl

SessionFactory = Callable[[EventSink], SessionControl]


@dataclass(frozen=True)
class Crossings:
    """What the engine side posts to the GUI thread, each with the slot's key."""

    opened: Callable[[int, SessionInfo], None]
    open_failed: Callable[[int, str], None]
    turn_done: Callable[[int, bool], None]  # and whether the intent was a turn


async def open_session(out: Crossings, slot: SessionSlot, factory: SessionFactory) -> None:
    slot.started = asyncio.get_running_loop().create_future()
    slot.opening = asyncio.current_task()
    try:
        session = factory(slot.sink)
        slot.session = session
        await session.start()
        info = session_info(session)
    except asyncio.CancelledError:
        slot.started.cancel()
        raise
    except Exception as exc:  # a broken agent or a dead engine: say so, keep the window
        message = message_of(exc)
        slot.sink(error_of(exc, "startup"))
        slot.started.set_result(False)
        if slot.forwarding.is_set():
            out.open_failed(slot.key, message)
        return
    slot.started.set_result(True)
    slot.shown_conversation = info.conversation_id
    if slot.forwarding.is_set():
        out.opened(slot.key, info)


async def send(out: Crossings, slot: SessionSlot, text: str, cancels_before: int) -> None:
    running = asyncio.current_task()
    assert running is not None
    idle = not slot.running
    slot.running.add(running)
    try:
        if slot.cancels_seen > cancels_before:
            return  # cancelled before it began
        session = slot.session
        if session is None:
            failed = slot.started is not None  # a session was made, and failed
            slot.sink(did_not_start() if failed else no_session())
            return
        if idle and slot.started is not None and slot.started.done():
            # What the view holds before this turn: the turn's events follow it.
            slot.post(Snapshot(session_info(session)))
        await session.send(text)  # a message sent while the model loads waits in it
        tell_if_switched(out, slot, session)  # `/new` opened another conversation
    except asyncio.CancelledError:
        pass  # cancelled while waiting for the model to load: nothing was sent
    except Exception as exc:  # send() should never raise; if it does, show it, not crash
        slot.sink(error_of(exc, "internal"))
    finally:
        slot.running.discard(running)
        if slot.forwarding.is_set():
            out.turn_done(slot.key, True)


def tell_if_switched(out: Crossings, slot: SessionSlot, session: SessionControl) -> None:
    if session is not slot.session or slot.shown_conversation is None:
        return
    if session.conversation_id != slot.shown_conversation:
        slot.shown_conversation = session.conversation_id
        if slot.forwarding.is_set():
            out.opened(slot.key, session_info(session))


async def reopen(
    out: Crossings, old: SessionSlot | None, slot: SessionSlot, factory: SessionFactory
) -> None:
    try:
        if old is not None:
            await close(old)
        await open_session(out, slot, factory)
    finally:
        if slot.forwarding.is_set():
            out.turn_done(slot.key, False)


async def switch(out: Crossings, slot: SessionSlot, conversation_id: str | None) -> None:
    try:
        session = slot.session
        if session is None:
            slot.sink(no_session())
            return
        try:
            await session.open_conversation(conversation_id)
            info = session_info(session)
        except Exception as exc:  # an unknown or unreadable conversation: say so
            slot.sink(error_of(exc, "startup"))
            return
        slot.shown_conversation = info.conversation_id
        if slot.forwarding.is_set():
            out.opened(slot.key, info)
    finally:
        if slot.forwarding.is_set():
            out.turn_done(slot.key, False)


async def retry(out: Crossings, slot: SessionSlot) -> None:
    running = asyncio.current_task()
    assert running is not None
    slot.running.add(running)
    try:
        session = slot.session
        if session is None:
            slot.sink(no_session())
        else:
            await session.retry()
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        slot.sink(error_of(exc, "internal"))
    finally:
        slot.running.discard(running)
        if slot.forwarding.is_set():
            out.turn_done(slot.key, True)


def cancel_on_loop(slot: SessionSlot, cancels: int) -> None:
    slot.cancels_seen = max(slot.cancels_seen, cancels)
    if slot.session is not None:
        slot.session.cancel()
    started = slot.started
    if started is None or not started.done():
        for running in list(slot.running):
            running.cancel()  # still waiting for the model: no turn began; drop it


async def close(slot: SessionSlot) -> None:
    opening = slot.opening
    if opening is not None and not opening.done() and opening is not asyncio.current_task():
        opening.cancel()  # still loading the model: stop loading
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await opening
    session, slot.session = slot.session, None
    if session is None:
        return
    session.cancel()
    if slot.running:
        await asyncio.wait(list(slot.running), timeout=2.0)
    slot.shown_conversation = None
    await session.close()
