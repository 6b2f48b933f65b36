"""The compaction trigger leaves the room a compaction on the cached conversation needs
(its instruction and its answer) on every window: at 80% of 1,024 that request had -73
tokens and fell back to a transcript, a prompt of its own that the engine evaluates whole.
Through a real session on the in-process engine, whose count is exact."""

from __future__ import annotations

import asyncio

import pytest

from engine.config import default_agent
from engine.context.budget import ContextBudget
from engine.context.summarizer import REPLAY_MARK, is_compaction_request
from engine.events import CompactionEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine


def _turn(i: int, words: int) -> str:
    filler = " ".join(f"shard-{i}-{m} ok" for m in range(words))
    return f"Report {i}: port {8000 + i} restarted; {filler}. Acknowledge briefly."


@pytest.mark.parametrize(("window", "words"), [(1024, 12), (2048, 30), (4096, 60)])
def test_every_compaction_is_asked_on_the_cached_conversation(tmp_path, window, words):
    engine = InProcessEngine(window=window)
    events: list[Event] = []
    agent = default_agent().with_changes(name="room", provider="llamacpp", num_ctx=window)

    async def go() -> None:
        session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append, provider=engine)
        await session.start()
        for i in range(24):
            await session.send(_turn(i, words))
        await session.close()

    asyncio.run(go())
    started = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "started"]
    assert started, "the conversation never compacted: the test's premise"
    asked = [
        r
        for r in engine.requests
        if is_compaction_request(
            r.messages[0].content if r.messages[0].role == "system" else "",
            r.messages[-1].content,
        )
    ]
    assert asked
    transcripts = [r for r in asked if REPLAY_MARK not in r.messages[-1].content]
    first_questions = [r for r in transcripts if "Question:" not in r.messages[-1].content]
    assert first_questions == [], "a compaction fell back to the transcript form"


def test_the_trigger_leaves_the_room_and_keeps_half_the_window():
    plain = ContextBudget(1024)
    roomy = ContextBudget(1024, compaction_room=400)
    assert plain.compact_threshold == int(1024 * 0.8)
    assert roomy.compact_threshold == 1024 - 400
    assert ContextBudget(4096, compaction_room=400).compact_threshold == int(4096 * 0.8)
    assert ContextBudget(1024, compaction_room=900).compact_threshold == 512
