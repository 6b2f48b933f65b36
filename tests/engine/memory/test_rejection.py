"""The person's decision stands: a suggestion they rejected is never queued again from the same
sentence, by any pass (the first pass, the extractor before a compaction, the close-time
reflection, `/learn`, `brim memory learn`), however the model words it, and across restarts.
Saying it again, in a new message, is a new statement. Against the llama-server double, the
extractor model suggesting the sentence every time it is asked."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.memory import MemoryService
from engine.memory.errors import RevokedQuote
from engine.memory.extractor import scan_statements
from engine.memory.tools import MemoryToolState, plan_lesson, queue_lesson
from engine.messages import user
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.tools import AutoApprove
from tests.engine.memory.fakes import FakeModel, Save, saving, sources_in
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer

VEGETARIAN = "I am vegetarian."
# The model's paraphrase: its own words, quoting the user's sentence.
PARAPHRASE = Save(VEGETARIAN, "diet", "The user is vegetarian.")
FILLER = [f"Filler {i}: " + "lorem ipsum dolor sit " * 40 for i in range(12)]


def _model() -> FakeModel:
    return FakeModel(extract=saving(PARAPHRASE))


def _agent(url: str):  # type: ignore[no-untyped-def]
    return default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=url, model="fake"
    )


def _say_reject_then(
    fake: FakeLlamaServer, home: Path, then: list[str], *, again: bool = False, **session: bool
) -> str:
    """A chat: the user states the sentence, rejects the suggestion it gave, then `then`."""
    service = MemoryService.for_paths(BrimPaths.resolve(home))

    async def go() -> str:
        s = ChatSession(
            _agent(fake.url),
            BrimPaths.resolve(home),
            lambda _e: None,
            approver=AutoApprove(),
            memory=True,
            **session,
        )
        await s.start()
        await s.send(f"Hello. {VEGETARIAN}")
        (waiting,) = service.pending()
        assert waiting.quote == VEGETARIAN
        assert [d.ok for d in service.reject([waiting.id])] == [True]
        for text in then:
            await s.send(text)
        await s.close()
        return s.conversation_id

    return asyncio.run(go())


def _asked_about_it(model: FakeModel) -> bool:
    """The extractor model was shown the sentence (and so suggested it, being `_model`)."""
    return any(
        VEGETARIAN in text
        for body in model.seen.get("extractor", [])
        for text in sources_in(body).values()
    )


def _wait(condition: Callable[[], bool], timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_learn_does_not_queue_a_rejected_statement_again(tmp_path: Path):
    model = _model()
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        _say_reject_then(fake, tmp_path, ["/learn"])
    assert _asked_about_it(model)
    assert MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending() == []


def test_the_extraction_before_a_compaction_does_not_queue_a_rejected_statement_again(
    tmp_path: Path,
):
    model = _model()
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = model
        _say_reject_then(fake, tmp_path, FILLER)
    assert "summarizer" in model.seen and _asked_about_it(model)
    assert MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending() == []


def test_the_reflection_on_close_does_not_queue_a_rejected_statement_again(tmp_path: Path):
    """The issue's case: the reflection, in a process of its own, queued it again."""
    model = _model()
    log = tmp_path / "logs" / "memory.log"
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        conversation = _say_reject_then(fake, tmp_path, [], reflect_on_close=True)
        assert _wait(lambda: log.exists() and f"reflect {conversation}: claimed" in log.read_text())
    assert _asked_about_it(model)
    assert MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending() == []
    assert "queued []" in log.read_text(encoding="utf-8")


def test_brim_memory_learn_does_not_queue_a_rejected_statement_again(tmp_path: Path):
    model = _model()
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        conversation = _say_reject_then(fake, tmp_path, [])
        engine = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        learned = run_brim(
            ["memory", "learn", "--conversation", conversation, "--json", *engine],
            data_dir=tmp_path,
        )
    assert learned.returncode == 0, learned.stderr
    assert json.loads(learned.stdout.splitlines()[-1])["queued"] == []
    assert _asked_about_it(model)
    assert MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending() == []


def test_saying_it_again_in_a_new_message_suggests_it_again_once(tmp_path: Path):
    model = _model()
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        _say_reject_then(fake, tmp_path, [VEGETARIAN, "/learn"])
    (waiting,) = MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending()
    assert waiting.quote == VEGETARIAN


def test_a_rejection_survives_a_restart_and_binds_only_that_message(tmp_path: Path):
    said = user(f"Hello. {VEGETARIAN}")
    first = MemoryService(tmp_path / "memory")
    scopes = first.scopes("default", None)
    (queued,) = scan_statements("c", [said], first, scopes)
    first.reject([queued])
    restarted = MemoryService(tmp_path / "memory")  # nothing held in memory between them
    assert scan_statements("c", [said], restarted, scopes) == []
    assert len(scan_statements("c", [user(VEGETARIAN)], restarted, scopes)) == 1


def test_a_rejected_lesson_is_not_proposed_again_word_for_word(service: MemoryService):
    state = MemoryToolState(
        service, service.scopes("default", None), lambda: None, "queue", actor="memory-learner"
    )  # type: ignore[arg-type]
    lesson = "Run the linter before committing."
    queued = queue_lesson(state, plan_lesson(state, scope="agent", subject="lint", content=lesson))
    service.reject([queued.id])
    with pytest.raises(RevokedQuote, match="rejected this lesson"):
        queue_lesson(state, plan_lesson(state, scope="agent", subject="lint", content=lesson))
    other = "Run the tests before committing."
    queue_lesson(state, plan_lesson(state, scope="agent", subject="lint", content=other))


def test_brim_memory_learn_and_reflect_count_in_the_conversations_usage(tmp_path: Path):
    """/usage sums every request a conversation cost: the close-time reflection's and
    `brim memory learn`'s too, as memory's."""
    from engine.store import Store

    model = _model()
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        conversation = _say_reject_then(fake, tmp_path, [])
        engine = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        paths = BrimPaths.resolve(tmp_path)

        def memory_requests() -> int:
            with Store.open(paths.db_path) as store:
                rows = store.usage_summary(conversation, by_purpose=True)
            return sum(r.requests for r in rows if r.model == "memory")

        before = memory_requests()
        for command in ("reflect", "learn"):
            run = run_brim(
                ["memory", command, "--conversation", conversation, "--json", *engine],
                data_dir=tmp_path,
            )
            assert run.returncode == 0, run.stderr
            after = memory_requests()
            assert after > before, f"brim memory {command} left /usage as it was"
            before = after
