"""What the session takes of what is typed, and when: it announces each submission it takes
(an AcceptedEvent, which the desktop draws as sent) before anything runs, refuses a second
one while a turn runs or waits, answers a report beside a running turn, and holds a message
sent while the model still loads until the load is over."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from engine.config import AgentConfig
from engine.events import AcceptedEvent, ContextReportEvent, ErrorEvent, Event, WithdrawnEvent
from engine.messages import Message
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, EngineReport, StreamItem
from engine.providers.errors import ProviderError
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine


class GatedEngine(InProcessEngine):
    """An engine whose model loads only when `loaded` is set, and whose answers start
    only while `answering` is set (cleared: a turn that runs until the test lets it end)."""

    def __init__(self, *, fail_to_load: bool = False) -> None:
        super().__init__(window=8192)
        self.loaded = asyncio.Event()
        self.answering = asyncio.Event()
        self.answering.set()
        self.fail_to_load = fail_to_load

    async def report(self, model: str) -> EngineReport:
        await self.loaded.wait()
        if self.fail_to_load:
            raise ProviderError("unreachable", "the engine went away while loading")
        return await super().report(model)

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        await self.answering.wait()
        async for item in super().stream_chat(model, messages, options):
            yield item


def _session(engine: InProcessEngine, tmp_path: Path, events: list[Event]) -> ChatSession:
    config = AgentConfig(name="t", provider="llamacpp", model="fake-model")
    return ChatSession(config, BrimPaths.resolve(tmp_path / "home"), events.append, provider=engine)


def _accepted(events: list[Event]) -> list[tuple[str, str, bool]]:
    return [(e.text, e.action, e.takes_turn) for e in events if isinstance(e, AcceptedEvent)]


def _busy(events: list[Event]) -> list[ErrorEvent]:
    return [e for e in events if isinstance(e, ErrorEvent) and e.kind == "busy"]


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@dataclass
class Loading:
    """A session whose model is still loading, with one message sent and waiting for it."""

    events: list[Event]
    engine: GatedEngine
    session: ChatSession
    starting: asyncio.Task[None]
    sending: asyncio.Task[None]


async def _loading_with(text: str, tmp_path: Path, **engine: bool) -> Loading:
    events: list[Event] = []
    gated = GatedEngine(**engine)
    session = _session(gated, tmp_path, events)
    starting = asyncio.create_task(session.start())
    await _settle()
    sending = asyncio.create_task(session.send(text))
    await _settle()
    return Loading(events, gated, session, starting, sending)


def test_a_message_sent_while_the_model_loads_is_taken_at_once_and_sent_when_it_is_ready(
    tmp_path: Path,
):
    async def scenario() -> None:
        loading = await _loading_with("Hello there", tmp_path)
        events, engine, session = loading.events, loading.engine, loading.session
        starting, sending = loading.starting, loading.sending
        assert _accepted(events) == [("Hello there", "message", True)]
        assert engine.requests == []  # nothing can be sent before the model is loaded
        await session.send("And this too")  # a second message while the first waits
        (busy,) = _busy(events)
        assert "already waiting for the model to load" in busy.message
        assert _accepted(events) == [("Hello there", "message", True)]
        engine.loaded.set()
        await starting
        await sending
        (request,) = engine.answered
        assert [m.content for m in request.messages if m.role == "user"] == ["Hello there"]
        await session.close()

    asyncio.run(scenario())


def test_a_report_is_answered_beside_a_running_turn_and_a_message_is_refused(tmp_path: Path):
    async def scenario() -> None:
        events: list[Event] = []
        engine = GatedEngine()
        engine.loaded.set()
        session = _session(engine, tmp_path, events)
        await session.start()
        engine.answering.clear()
        turn = asyncio.create_task(session.send("A long job"))
        await _settle()
        reports_before = sum(isinstance(e, ContextReportEvent) for e in events)
        await session.send("/context")
        assert _accepted(events)[-1] == ("/context", "report", False)
        assert sum(isinstance(e, ContextReportEvent) for e in events) == reports_before + 1
        await session.send("/compact")  # holds the session like a turn: refused
        await session.send("one more thing")
        assert len(_busy(events)) == 2
        assert [a[0] for a in _accepted(events)] == ["A long job", "/context"]
        engine.answering.set()
        await turn
        assert len(engine.answered) == 1
        await session.send("one more thing")  # taken once the turn is over
        assert _accepted(events)[-1] == ("one more thing", "message", True)
        assert len(engine.answered) == 2
        await session.close()

    asyncio.run(scenario())


def test_a_message_waiting_for_a_load_that_fails_is_told_the_session_did_not_start(
    tmp_path: Path,
):
    async def scenario() -> None:
        loading = await _loading_with("Hello there", tmp_path, fail_to_load=True)
        events, engine, session = loading.events, loading.engine, loading.session
        starting, sending = loading.starting, loading.sending
        engine.loaded.set()
        await asyncio.gather(starting, return_exceptions=True)
        await sending
        said = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "no_session"]
        assert [e.message for e in said] == ["The session did not start."]
        assert said[0].retryable
        assert engine.requests == []
        await session.send("Again")  # the session is not left held by the message
        assert _accepted(events)[-1] == ("Again", "message", True)
        assert not _busy(events)
        await session.close()

    asyncio.run(scenario())


def test_a_message_cancelled_while_it_waits_for_the_load_is_withdrawn_and_never_sent(
    tmp_path: Path,
):
    async def scenario() -> None:
        loading = await _loading_with("Never mind", tmp_path)
        events, engine, session = loading.events, loading.engine, loading.session
        starting, sending = loading.starting, loading.sending
        sending.cancel()  # Esc while the model loads: the desktop cancels the waiting send
        await asyncio.gather(sending, return_exceptions=True)
        withdrawn = [e for e in events if isinstance(e, WithdrawnEvent)]
        assert [(e.text, e.action) for e in withdrawn] == [("Never mind", "message")]
        engine.loaded.set()
        await starting
        assert engine.requests == []
        assert "Never mind" not in [m.content for m in session.transcript()]
        await session.send("Now then")  # the session is free again
        assert [m.content for m in engine.answered[0].messages if m.role == "user"] == ["Now then"]
        await session.close()

    asyncio.run(scenario())
