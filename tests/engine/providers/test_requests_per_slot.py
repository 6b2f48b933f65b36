"""Two conversations on one llama-server: their requests overlap only where the server has
a slot for each. One slot (`-np 1`) queues the second request inside the server, where its
timeout runs and it pushes the first conversation's prompt out of the slot; so Brim sends
them one after the other. Slots of their own (`-np 2`) take both at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import ErrorEvent, Event, TurnEndEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, Reply

ANSWER = " ".join(f"w{i}" for i in range(40))


def _two_at_once(tmp_path: Path, fake: FakeLlamaServer) -> list[Event]:
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake"
    )

    async def go() -> None:
        paths = BrimPaths.resolve(tmp_path)
        first = ChatSession(agent, paths, events.append)
        second = ChatSession(agent, paths, events.append)
        await first.start()
        await second.start()
        await asyncio.gather(first.send("One?"), second.send("Two?"))
        await first.close()
        await second.close()

    fake.responder = lambda _request: Reply(text=ANSWER)
    asyncio.run(go())
    return events


def _peak(fake: FakeLlamaServer) -> int:
    return fake.pool.peak_in_flight if fake.pool is not None else 0


def test_a_llama_server_with_one_slot_gets_one_request_at_a_time(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1, token_delay=0.005) as fake:
        events = _two_at_once(tmp_path, fake)
        assert len(fake.chat_requests) == 2
        assert _peak(fake) == 1
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 2
    assert [e for e in events if isinstance(e, ErrorEvent)] == []


def test_a_llama_server_with_a_slot_for_each_answers_both_at_once(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=2, token_delay=0.005) as fake:
        events = _two_at_once(tmp_path, fake)
        assert _peak(fake) == 2
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 2
