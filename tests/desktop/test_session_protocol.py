"""The sessions the desktop can be given: the engine's ChatSession (what the app and the
desktop tests run) and the UI bench's streaming session. Both implement every member of
`SessionControl` with the protocol's signatures, and both behave as the window expects of
a turn: what is typed is taken first (an AcceptedEvent), the answer streams, the turn ends
ready; a second message while one streams is refused and the first goes on; a cancel ends
the turn with no receipt. The bench's session says what ChatSession says, in its order."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.streaming_session import StreamingSession
from engine.api import BrimPaths, ChatSession, SessionControl
from engine.config import AgentConfig
from engine.events import (
    AcceptedEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    StateEvent,
    TurnEndEvent,
)
from tests.helpers.fake_provider import Answer, InProcessEngine
from tests.helpers.fake_tokenizer import split_reply

ANSWER = "Hello from the fake."
SESSIONS = ["ChatSession", "StreamingSession"]


def _members() -> dict[str, Any]:
    """The protocol's members: its annotated attributes and what its body defines."""
    members: dict[str, Any] = dict.fromkeys(SessionControl.__annotations__)
    for name, value in vars(SessionControl).items():
        if name.startswith("_"):
            continue  # dunders and typing's own bookkeeping
        members[name] = value
    return members


def _shape(function: Any) -> tuple[bool, list[tuple[str, Any]]]:
    """Whether it is a coroutine function, and its parameters by name and kind."""
    signature = inspect.signature(function)
    return inspect.iscoroutinefunction(function), [
        (p.name, p.kind) for p in signature.parameters.values()
    ]


@dataclass
class Subject:
    """A session and the events it said."""

    session: Any
    events: list[Event]


def _subject(which: str, tmp_path: Path, *, holds: bool = False) -> Subject:
    """`which` session answering ANSWER (`holds`: an answer that runs until cancelled)."""
    events: list[Event] = []
    if which == "ChatSession":
        engine = InProcessEngine(window=8192)
        engine.responder = lambda _request: Answer(ANSWER)
        if holds:
            engine.script(ANSWER, hold=True)
        agent = AgentConfig(name="t", provider="llamacpp", model="fake-model")
        paths = BrimPaths.resolve(tmp_path / "home")
        return Subject(ChatSession(agent, paths, events.append, provider=engine), events)
    tokens = split_reply(ANSWER) + (["and on"] * 1_000_000 if holds else [])
    return Subject(StreamingSession(events.append, tokens), events)


def _sessions(tmp_path: Path) -> list[Any]:
    return [_subject(which, tmp_path / which).session for which in SESSIONS]


def _said(events: list[Event]) -> list[str]:
    """What a turn said, as the window reads it: each kind once per run (a stream of deltas
    is one `delta`), states by name; the rail's reports left out (the bench has none)."""
    out: list[str] = []
    for event in events:
        name = f"state:{event.state}" if isinstance(event, StateEvent) else event.type
        if name in ("context_report", "answer_progress"):
            continue
        if not out or out[-1] != name:
            out.append(name)
    return out


def _turn(subject: Subject, text: str = "Hi") -> list[Event]:
    async def run() -> list[Event]:
        await subject.session.start()
        subject.events.clear()
        await subject.session.send(text)
        said = list(subject.events)
        await subject.session.close()
        return said

    return asyncio.run(run())


def test_the_protocol_names_what_the_bridge_and_window_use():
    assert set(_members()) == {
        "conversation_id",
        "agent",
        "workspace",
        "window",
        "start",
        "send",
        "cancel",
        "retry",
        "open_conversation",
        "close",
        "history",
        "transcript",
        "turn_receipts",
        "lower_pin",
    }


@pytest.mark.parametrize("which", SESSIONS)
def test_each_session_has_every_member_with_the_protocols_signature(tmp_path: Path, which: str):
    session = next(s for s in _sessions(tmp_path) if type(s).__name__ == which)
    cls = type(session)
    for name, declared in _members().items():
        assert hasattr(session, name), f"{which} lacks {name}"
        if declared is None:
            continue  # an attribute: present is enough
        if isinstance(declared, property):
            assert isinstance(inspect.getattr_static(cls, name), property), f"{which}.{name}"
            continue
        implemented = inspect.getattr_static(cls, name)
        assert callable(implemented), f"{which}.{name} is not a method"
        assert _shape(implemented) == _shape(declared), f"{which}.{name}"


@pytest.mark.parametrize("which", SESSIONS)
def test_a_message_is_taken_first_streams_its_answer_and_ends_ready(tmp_path: Path, which: str):
    subject = _subject(which, tmp_path)
    events = _turn(subject, "What is Brim?")
    accepted = events[0]
    assert isinstance(accepted, AcceptedEvent)
    assert (accepted.text, accepted.action) == ("What is Brim?", "message")
    assert accepted.takes_turn
    assert accepted.submission
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == ANSWER
    assert [type(e) for e in events].count(TurnEndEvent) == 1
    assert events[-1] == StateEvent("ready")
    history = [(m.role, m.content) for m in subject.session.history() if m.role != "system"]
    assert history == [("user", "What is Brim?"), ("assistant", ANSWER)]


def test_the_bench_session_says_what_chat_session_says_in_its_order(tmp_path: Path):
    real = _said(_turn(_subject("ChatSession", tmp_path / "real")))
    bench = _said(_turn(_subject("StreamingSession", tmp_path / "bench")))
    assert real[0] == bench[0] == "accepted"
    assert real[-1] == bench[-1] == "state:ready"
    # Every kind the bench says, ChatSession says too, and in the same order.
    assert [kind for kind in real if kind in bench] == bench, (real, bench)
    assert {"delta", "usage", "context", "turn_end"} <= set(bench)


@pytest.mark.parametrize("which", SESSIONS)
def test_a_second_message_while_one_streams_is_refused_and_a_cancel_ends_the_turn(
    tmp_path: Path, which: str
):
    subject = _subject(which, tmp_path, holds=True)
    session, events = subject.session, subject.events

    async def run() -> list[Event]:
        await session.start()
        events.clear()
        first = asyncio.create_task(session.send("A long job"))
        for _ in range(2000):
            if any(isinstance(e, DeltaEvent) for e in events):
                break
            await asyncio.sleep(0.001)
        await session.send("Another")
        refused = [e for e in events if isinstance(e, ErrorEvent)]
        assert [(e.kind, e.message) for e in refused] == [
            ("busy", "A turn is still running; wait or cancel it first.")
        ]
        assert not first.done()
        session.cancel()
        await asyncio.wait_for(first, 5)
        said = list(events)
        await session.close()
        return said

    events = asyncio.run(run())
    assert [e.text for e in events if isinstance(e, AcceptedEvent)] == ["A long job"]
    assert not [e for e in events if isinstance(e, TurnEndEvent)]  # no receipt
    assert NoticeEvent("info", "Turn cancelled.") in events
    assert events[-1] == StateEvent("ready")
