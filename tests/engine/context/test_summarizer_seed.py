"""A model the bench measured unable to write a checkpoint or a memory fact is not asked at
its first compaction in a user's conversation (engine/context/summarizer_seed.py,
resources/summarizers.toml written by `python -m bench summarizer_seed --write`); a model it
did not measure is asked as before, and what the model then writes counts beside the seed."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.context import summarizer_seed
from engine.context.summarizer import is_compaction_request
from engine.context.summarizer_record import EVIDENCE, SummarizerRecord
from engine.context.summarizer_seed import SEED_FILE, model_stem, seed_for
from engine.events import CompactionEvent, Event
from engine.memory.replayed_scan import is_memory_replay
from engine.paths import BrimPaths
from engine.providers.base import EngineReport
from engine.providers.bundled_models import BUNDLED
from engine.resources import resource_text
from engine.session import ChatSession
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

WINDOW = 2048
FACT = "The staging database is called ledger-stage-9."
REFUSER = {
    "names": ["tiny-refuser.Q4_0"],
    "counts": {
        "freeform_refused": 2,
        "guided_empty": 2,
        "memory_empty": 2,
        "freeform_accepted": 0,
        "guided_useful": 0,
        "memory_queued": 0,
    },
}


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's table holds one model, measured refusing everything."""
    monkeypatch.setattr(summarizer_seed, "_measured", lambda: (REFUSER,))


class ServesAFile(InProcessEngine):
    """llama-server started with `-m …/tiny-refuser.Q4_0.gguf`: an agent that names no
    model is served that file, and the engine reports its path."""

    async def report(self, model: str) -> EngineReport:
        found = await super().report(model)
        found.model = model or "/models/tiny-refuser.Q4_0.gguf"
        return found


def _turn(i: int) -> str:
    lines = " ".join(f"worker-{m} shard {i * 7 + m} wrote {(i + 1) * m} rows" for m in range(16))
    head = f"{FACT} " if i == 0 else ""
    return f"{head}Report {i}: port {8000 + i} restarted. {lines}. Acknowledge briefly."


def _asks_model(r: Request) -> bool:
    """A compaction's request to the model: the checkpoint, a guided question or memory's."""
    first = r.messages[0].content if r.messages[0].role == "system" else ""
    last = r.messages[-1].content
    return is_compaction_request(first, last) or is_memory_replay(last)


def _converse(home: Path, engine: InProcessEngine, model: str, turns: int = 14) -> list[Event]:
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="seed", provider="llamacpp", model=model, num_ctx=WINDOW
    )

    async def go() -> None:
        session = ChatSession(
            agent, BrimPaths.resolve(home), events.append, provider=engine, memory=True
        )
        await session.start()
        for i in range(turns):
            await session.send(_turn(i))
        await session.close()

    asyncio.run(go())
    return events


def _finished(events: list[Event]) -> list[CompactionEvent]:
    return [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]


@pytest.mark.parametrize("model", ["tiny-refuser.Q4_0", "/models/TINY-refuser.Q4_0.gguf", ""])
def test_a_measured_refuser_is_asked_nothing_at_its_first_compaction(tmp_path, measured, model):
    engine = ServesAFile(window=WINDOW)
    engine.responder = lambda _r: Answer("Noted.")
    events = _converse(tmp_path, engine, model)
    finished = _finished(events)
    assert finished, "the premise: the conversation compacted"
    assert finished[0].summary == "mechanical"
    assert [r for r in engine.requests if _asks_model(r)] == []
    # The checkpoint Brim wrote itself still carries what the user stated.
    assert any(FACT in m.content for m in engine.requests[-1].messages)


def test_a_model_the_bench_did_not_measure_is_asked(tmp_path, measured):
    engine = InProcessEngine(window=WINDOW)
    engine.responder = lambda _r: Answer("Noted.")
    events = _converse(tmp_path, engine, "some-other-model")
    assert _finished(events)
    asked = [r for r in engine.requests if _asks_model(r)]
    assert any(is_memory_replay(r.messages[-1].content) for r in asked)
    assert any(not is_memory_replay(r.messages[-1].content) for r in asked)


def test_a_checkpoint_the_model_writes_outweighs_the_measured_refusals(tmp_path):
    record = SummarizerRecord.load("k", tmp_path / "r.json", REFUSER["counts"])  # type: ignore[arg-type]
    assert record.ask() == "mechanical" and not record.asks_memory()
    record.counts["compactions"] = 4  # the fifth asks again
    assert record.ask() == "freeform"
    record.note(asked="freeform", freeform_refused=False, source="freeform")
    assert record.ask() == "freeform"
    # The seed is not written into the user's own record.
    again = SummarizerRecord.load("k", tmp_path / "r.json")
    assert again.counts == {"compactions": 5, "freeform_accepted": 1}


def test_the_shipped_measurements_name_bundled_models_and_every_count():
    table = tomllib.loads(resource_text(SEED_FILE))
    bundled = {model_stem(n) for m in BUNDLED for n in m.names()}
    assert table["model"], "the bench's measurements are shipped"
    for entry in table["model"]:
        assert {model_stem(n) for n in entry["names"]} & bundled
        assert set(entry["counts"]) == set(EVIDENCE)
        assert entry["measured"]
        assert seed_for(entry["names"][0]) == entry["counts"]
