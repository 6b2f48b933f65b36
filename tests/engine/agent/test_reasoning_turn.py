"""A thinking model's reasoning through the real session, store and loop (issue 49): told
apart from the answer while it streams (the window is never blank), kept with the saved
message and never in its text, never sent back, stopped when it loops, and said in so many
words when it spent the whole output cap with no answer written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.config import AgentConfig
from engine.events import (
    NOTICE_REASONING_UNAVAILABLE,
    NOTICE_REPETITION,
    NOTICE_THINKING_CUT,
    AnswerProgressEvent,
    DeltaEvent,
    Event,
    NoticeEvent,
    ReasoningEndEvent,
    ReasoningEvent,
    StateEvent,
)
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from engine.window.output_cap import client_limit
from tests.helpers.thinking_engine import ThinkingEngine

THOUGHT = ["The user asks ", "for two and two. ", "That is four."]
AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")


def _run(
    home: BrimPaths,
    engine: ThinkingEngine,
    texts: list[str],
    events: list[Event],
    agent: AgentConfig = AGENT,
    conversation: str | None = None,
) -> tuple[str, list[Message]]:
    async def go() -> tuple[str, list[Message]]:
        session = ChatSession(
            agent, home, events.append, provider=engine, conversation_id=conversation
        )
        await session.start()
        for text in texts:
            await session.send(text)
        history = session.history()
        await session.close()
        return session.conversation_id, history

    return asyncio.run(go())


def _stored(home: BrimPaths, conversation: str) -> list[Message]:
    with Store.open(home.ensure().db_path) as store:
        return store.messages(conversation)


def test_the_reasoning_is_told_apart_kept_with_the_message_and_never_sent_back(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=4096)
    engine.think(THOUGHT)
    engine.script("Four.")
    engine.script("Yes.")
    events: list[Event] = []
    conversation, _ = _run(home, engine, ["What is two and two?", "Sure?"], events)

    # The window: thinking first (never blank), the pieces apart, closed before the answer.
    kinds = [
        e.state if isinstance(e, StateEvent) else e.type
        for e in events
        if isinstance(e, (StateEvent, ReasoningEvent, ReasoningEndEvent, DeltaEvent))
    ]
    first = kinds.index("thinking")
    assert kinds[first + 1 : first + 5] == ["reasoning", "reasoning", "reasoning", "reasoning_end"]
    assert kinds[first + 5] == "streaming" and kinds[first + 6] == "delta"
    told = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert told == "".join(THOUGHT)
    end = next(e for e in events if isinstance(e, ReasoningEndEvent))
    assert end.tokens > 0 and end.seconds >= 0 and end.estimated
    answer = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    assert "two and two" not in answer

    # Kept with the message, not in its text; restored from the store; exported.
    stored = [m for m in _stored(home, conversation) if m.role == "assistant"]
    assert stored[0].content == "Four." and stored[0].reasoning == "".join(THOUGHT)
    assert stored[0].to_dict()["reasoning"] == "".join(THOUGHT)
    assert stored[1].reasoning == ""  # the second answer did not think
    _, reopened = _run(home, engine, [], [], conversation=conversation)
    assert next(m.reasoning for m in reopened if m.role == "assistant") == "".join(THOUGHT)

    # Never sent back: the next request carries the answer alone.
    later = engine.requests[1].messages
    assert all("two and two. That is four" not in m.content for m in later)
    assert any(m.role == "assistant" and m.content == "Four." for m in later)


def test_the_gauge_grows_with_the_reasoning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("engine.agent.answer_stream.PROGRESS_EVERY_S", 0.0)
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=4096)
    engine.think(
        [f"thought {i}: " + f"weighing option {i} against the rest " * 10 for i in range(5)]
    )
    engine.script("Done.")
    events: list[Event] = []
    _run(home, engine, ["Go."], events)
    progress = [e for e in events if isinstance(e, AnswerProgressEvent)]
    thought = [e for e in progress if e.reasoning_tokens]
    assert len(thought) >= 5
    assert (
        thought[-1].completion_tokens >= thought[-1].reasoning_tokens > thought[0].reasoning_tokens
    )


@pytest.mark.parametrize("how", ["engine_cap", "client_cap"])
def test_a_cap_spent_thinking_is_said_and_no_empty_answer_is_kept(tmp_path: Path, how: str):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=8192)
    agent = AgentConfig(name="chat", provider="llamacpp", model="fake-model", max_tokens=64)
    if how == "engine_cap":  # the engine stopped at max_tokens, all of it thought
        engine.think(["Hmm, let me weigh every option. "] * 12)
        engine.script("", finish_reason="length", completion_tokens=64)
    else:  # an engine that ignored max_tokens: Brim's own cap counts the thinking too
        engine.think([f"step {i} of a very long deliberation, " for i in range(2000)])
        engine.script("Never written.")
    events: list[Event] = []
    conversation, _ = _run(home, engine, ["Plan my week."], events, agent=agent)

    notices = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_THINKING_CUT]
    assert len(notices) == 1
    assert "spent its whole answer budget of 64 tokens thinking and wrote no answer" in (
        notices[0].text
    )
    assert "continue" in notices[0].text
    assert notices[0].details["max_tokens"] == 64
    stored = _stored(home, conversation)
    assert not any(m.role == "assistant" for m in stored)  # no empty answer
    assert not any(isinstance(e, DeltaEvent) for e in events)
    if how == "client_cap":
        told = sum(len(e.text) for e in events if isinstance(e, ReasoningEvent))
        assert told < len("".join(f"step {i} of a very long deliberation, " for i in range(2000)))
        assert client_limit(64) < 1000


def test_the_repetition_guard_stops_a_looping_thought(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=8192)
    loop_line = "Wait, I should check the user's question again.\n"
    engine.think(["First, read the question.\n", *[loop_line] * 3000])
    engine.script("Never written.")
    events: list[Event] = []
    conversation, _ = _run(home, engine, ["Hello?"], events)

    notices = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_REPETITION]
    assert len(notices) == 1 and notices[0].details["in"] == "reasoning"
    assert "thinking" in notices[0].text
    pieces = [e for e in events if isinstance(e, ReasoningEvent)]
    assert len(pieces) < 200  # stopped early, not after 3,000 repeats
    assert not any(isinstance(e, DeltaEvent) for e in events)
    stored = _stored(home, conversation)
    assert not any(m.role == "assistant" for m in stored)


@pytest.mark.parametrize(("setting", "sent"), [("default", None), ("off", "off"), ("high", "high")])
def test_the_agents_reasoning_setting_reaches_its_requests(
    tmp_path: Path, setting: str, sent: str | None
):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=4096)
    agent = AgentConfig(name="chat", provider="llamacpp", model="fake-model", reasoning=setting)
    _run(home, engine, ["Hi."], [], agent=agent)
    assert [o.reasoning for o in engine.options] == [sent]


def test_reasoning_asked_of_a_model_that_cannot_is_refused_once_with_the_reason(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = ThinkingEngine(window=4096, thinks=False)
    agent = AgentConfig(name="chat", provider="llamacpp", model="fake-model", reasoning="high")
    events: list[Event] = []
    _run(home, engine, ["Hi.", "Again."], events, agent=agent)
    refused = [
        e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_REASONING_UNAVAILABLE
    ]
    assert len(refused) == 1 and "cannot reason" in refused[0].text
    assert [o.reasoning for o in engine.options] == [None, None]
