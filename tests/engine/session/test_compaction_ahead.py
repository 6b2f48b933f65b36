"""Compaction while the user reads (engine/session/ahead.py): when an answer brings the
conversation near the trigger, the session compacts right after it and has the engine
evaluate the rebuilt prompt, so the user's next Enter finds nothing left to do but the new
message. Through a real session on the in-process engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.context.guided import is_compaction_request
from engine.events import CompactionEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

WINDOW = 2048


def _turn(i: int) -> str:
    lines = " ".join(
        f"worker-{m} shard {i * 7 + m} committed {(i + 1) * (m + 3)} rows" for m in range(16)
    )
    return f"Report {i}: the service on port {8000 + i} restarted. {lines}. Acknowledge briefly."


def _is_compaction(request: Request) -> bool:
    messages = request.messages
    first = messages[0].content if messages and messages[0].role == "system" else ""
    return is_compaction_request(first, messages[-1].content if messages else "")


def _session(engine: InProcessEngine, home: Path, events: list[Event], **kw: bool) -> ChatSession:
    agent = default_agent().with_changes(name="ahead", provider="llamacpp", num_ctx=WINDOW)
    return ChatSession(agent, BrimPaths.resolve(home), events.append, provider=engine, **kw)


def test_the_turn_after_a_compaction_sends_only_its_message_to_a_warm_engine(tmp_path):
    engine = InProcessEngine(window=WINDOW)
    events: list[Event] = []
    turns: list[range] = []  # the engine's requests made while each send ran

    async def go() -> None:
        session = _session(engine, tmp_path, events, compact_ahead=True)
        await session.start()
        for i in range(12):
            await asyncio.sleep(0)  # the user reads: a compaction ahead runs meanwhile
            await session._settle_ahead()  # (the reading lasts as long as it takes)
            start = len(engine.requests)
            await session.send(_turn(i))
            turns.append(range(start, len(engine.requests)))
        await session.close()

    asyncio.run(go())
    compacted = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert compacted, "the conversation never compacted: the test's premise"
    # No turn's own requests include a compaction: each ran before the user's next Enter.
    for turn in turns:
        assert not any(_is_compaction(engine.requests[i]) for i in turn)
    # Each compaction ends with a warm-up of one token; the next turn's request finds the
    # whole rebuilt history in the engine's cache, so only its new message is evaluated.
    warmups = [i for i, r in enumerate(engine.requests) if r.options.max_tokens == 1]
    assert len(warmups) == len(compacted)
    for index in warmups:
        warm, following = engine.requests[index], engine.requests[index + 1]
        assert any(t.start == index + 1 for t in turns)  # the next request is the next turn's
        assert following.messages[: len(warm.messages)] == warm.messages
        new = following.prompt_tokens - following.cached_tokens
        message = len(engine._tokens([following.messages[-1]], []))  # the new one, framed
        assert new <= message + 8 < following.prompt_tokens // 2


def test_without_compaction_ahead_the_user_waits_for_it_in_the_turn(tmp_path):
    """The premise of the test above: the same conversation compacts inside a turn."""
    engine = InProcessEngine(window=WINDOW)
    events: list[Event] = []
    starts: list[int] = []

    async def go() -> None:
        session = _session(engine, tmp_path, events)
        await session.start()
        for i in range(12):
            starts.append(len(engine.requests))
            await session.send(_turn(i))
        await session.close()

    asyncio.run(go())
    inside = [
        start
        for start, end in zip(starts, [*starts[1:], len(engine.requests)], strict=True)
        if any(_is_compaction(r) for r in engine.requests[start:end])
    ]
    assert inside


async def _send_until_it_compacts_ahead(session: ChatSession) -> int:
    i = 0
    while session._ahead is not None and not session._ahead.running:
        await session.send(_turn(i))
        i += 1
        assert i < 20, "no compaction ahead started"
    return i


def test_a_close_while_it_compacts_stops_it_and_loses_nothing(tmp_path):
    engine = InProcessEngine(window=WINDOW)
    events: list[Event] = []

    def responder(request: Request) -> Answer:
        if _is_compaction(request):
            return Answer("## Goal\n- restart reports", hold=True)  # until cancelled
        return Answer("Noted.")

    engine.responder = responder

    async def go() -> tuple[list[str], list[str]]:
        session = _session(engine, tmp_path, events, compact_ahead=True)
        await session.start()
        await _send_until_it_compacts_ahead(session)
        while not any(_is_compaction(r) for r in engine.requests):
            await asyncio.sleep(0.01)
        before = [m.content for m in session.history()]
        await session.close()  # stops the compaction midway
        return before, [m.content for m in session.history()]

    before, after = asyncio.run(go())
    assert after == before  # nothing replaced, nothing lost
    assert not [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]


def test_a_message_sent_while_it_compacts_waits_for_it_then_goes(tmp_path):
    engine = InProcessEngine(window=WINDOW)
    events: list[Event] = []

    def responder(request: Request) -> Answer:
        if _is_compaction(request):
            return Answer("## Goal\n- restart reports", delay_s=0.05)  # a slow summarizer
        return Answer("Noted.")

    engine.responder = responder

    async def go() -> ChatSession:
        session = _session(engine, tmp_path, events, compact_ahead=True)
        await session.start()
        await _send_until_it_compacts_ahead(session)
        await session.send("Which port did report 2 name?")  # at once: no reading time
        await session.close()
        return session

    session = asyncio.run(go())
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) == 1
    last = engine.requests[-1]
    assert last.messages[-1].content == "Which port did report 2 name?"
    assert any(m.kind == "summary" for m in session.history())  # sent after the rebuild
