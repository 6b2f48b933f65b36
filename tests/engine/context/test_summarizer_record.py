"""A summarizer model that has shown it cannot write a checkpoint is not asked again at
every compaction (engine/context/summarizer_record.py): its free-form checkpoint, then its
guided questions, are skipped once refused twice, across conversations, and asked again
now and then."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.context.summarizer import (
    GUIDED_SYSTEM,
    REPLAY_QUESTION_MARK,
    is_compaction_request,
)
from engine.context.summarizer_record import ASK_AGAIN_EVERY, SummarizerRecord
from engine.events import CompactionEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

WINDOW = 2048
FACT = "The staging database is called ledger-stage-9."


def test_refusals_move_the_next_ask_from_freeform_to_guided_or_none(tmp_path):
    path = tmp_path / "summarizers.json"
    record = SummarizerRecord.load("llamacpp|x|m", path)
    asked = []
    for _ in range(5):
        asked.append(record.ask())
        record.note(asked=asked[-1], freeform_refused=True, source="mechanical")
    # A refused free-form checkpoint is followed by the guided questions in the same
    # compaction: one compaction shows both refused.
    assert asked == ["freeform", "mechanical", "mechanical", "mechanical", "freeform"]
    guided_only = SummarizerRecord("k")
    for _ in range(2):
        guided_only.note(asked="freeform", freeform_refused=True, source="guided")
    assert guided_only.ask() == "guided"  # its guided answers were of use
    again = SummarizerRecord.load("llamacpp|x|m", path)  # another conversation, later
    assert again.ask() == "mechanical"  # the sixth compaction asks again
    assert SummarizerRecord.load("llamacpp|x|other", path).ask() == "freeform"


def test_guided_questions_that_mostly_give_nothing_stop_being_asked():
    # One conversation's guided round gave lines, then two gave nothing: the questions
    # cost every compaction their requests for a checkpoint Brim writes itself anyway.
    record = SummarizerRecord("k")
    record.note(asked="freeform", freeform_refused=True, source="guided")
    assert record.ask() == "guided"
    record.note(asked="guided", freeform_refused=True, source="mechanical")
    assert record.ask() == "guided"  # as often of use as not
    record.note(asked="guided", freeform_refused=True, source="mechanical")
    assert record.ask() == "mechanical"


def test_a_model_that_wrote_one_checkpoint_keeps_being_asked(tmp_path):
    record = SummarizerRecord("k")
    record.note(asked="freeform", freeform_refused=False, source="freeform")
    for _ in range(4):
        record.note(asked=record.ask(), freeform_refused=True, source="mechanical")
    assert record.ask() == "freeform"


def test_now_and_then_the_model_is_asked_again(tmp_path):
    record = SummarizerRecord("k")
    asks = []
    for _ in range(ASK_AGAIN_EVERY * 2):
        asks.append(record.ask())
        record.note(asked=asks[-1], freeform_refused=True, source="mechanical")
    assert asks[ASK_AGAIN_EVERY - 1] == "freeform"
    assert asks[2 * ASK_AGAIN_EVERY - 1] == "freeform"
    assert asks.count("mechanical") >= ASK_AGAIN_EVERY


def test_an_unreadable_record_is_an_empty_one(tmp_path):
    path = tmp_path / "summarizers.json"
    path.write_text("{not json", encoding="utf-8")
    record = SummarizerRecord.load("k", path)
    assert record.ask() == "freeform"
    record.note(asked="freeform", freeform_refused=True, source="mechanical")
    assert SummarizerRecord.load("k", path).counts["freeform_refused"] == 1


def _turn(i: int) -> str:
    lines = " ".join(f"worker-{m} shard {i * 7 + m} wrote {(i + 1) * m} rows" for m in range(16))
    head = f"{FACT} " if i == 0 else ""
    return f"{head}Report {i}: port {8000 + i} restarted. {lines}. Acknowledge briefly."


def _conversation(home: Path, engine: InProcessEngine, turns: int) -> list[Event]:
    events: list[Event] = []
    agent = default_agent().with_changes(name="rec", provider="llamacpp", num_ctx=WINDOW)

    async def go() -> None:
        session = ChatSession(agent, BrimPaths.resolve(home), events.append, provider=engine)
        await session.start()
        for i in range(turns):
            await session.send(_turn(i))
        await session.close()

    asyncio.run(go())
    return events


def _compaction_requests(requests: list[Request]) -> list[Request]:
    out = []
    for r in requests:
        first = r.messages[0].content if r.messages[0].role == "system" else ""
        if is_compaction_request(first, r.messages[-1].content):
            out.append(r)
    return out


def test_a_later_conversation_sends_the_model_no_question_it_never_answered(tmp_path, monkeypatch):
    # The periodic ask-again is tested above; here it would land on a count of compactions.
    monkeypatch.setattr("engine.context.summarizer_record.ASK_AGAIN_EVERY", 1000)
    engine = InProcessEngine(window=WINDOW)
    engine.responder = lambda _r: Answer("I'm sorry, I cannot help with that.")
    first = _conversation(tmp_path, engine, 24)
    compactions = [e for e in first if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(compactions) >= 2  # the premise: refused twice, free-form and guided
    asked_before = _compaction_requests(engine.requests)
    assert any(
        r.messages[0].content == GUIDED_SYSTEM or REPLAY_QUESTION_MARK in r.messages[-1].content
        for r in asked_before
    )

    engine.requests.clear()
    later = _conversation(tmp_path, engine, 16)
    finished = [e for e in later if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert finished and finished[0].summary == "mechanical"
    assert _compaction_requests(engine.requests) == []  # nothing asked, nothing waited for
    # The checkpoint still carries what the user stated.
    last = engine.requests[-1]
    assert any(FACT in m.content for m in last.messages)


def test_memory_stops_asking_a_model_whose_extractions_never_queued_a_fact(tmp_path, monkeypatch):
    from engine.memory.replayed_scan import is_memory_replay

    monkeypatch.setattr("engine.context.summarizer_record.ASK_AGAIN_EVERY", 1000)

    def memory_request(r: Request) -> bool:
        first = r.messages[0].content if r.messages[0].role == "system" else ""
        return is_memory_replay(r.messages[-1].content) or first.startswith("You are Brim's memory")

    engine = InProcessEngine(window=WINDOW)
    engine.responder = lambda r: Answer(
        '{"memories": [], "lessons": []}' if memory_request(r) else "Noted."
    )
    events: list[Event] = []
    agent = default_agent().with_changes(name="mem", provider="llamacpp", num_ctx=WINDOW)

    async def go() -> None:
        paths = BrimPaths.resolve(tmp_path)
        session = ChatSession(agent, paths, events.append, provider=engine, memory=True)
        await session.start()
        for i in range(30):
            await session.send(_turn(i))
        await session.close()

    asyncio.run(go())
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 3  # the premise
    # Asked once, it queued nothing: later compactions send no extraction request.
    assert len([r for r in engine.requests if memory_request(r)]) == 1
