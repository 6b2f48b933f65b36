"""The close-time reflection within a budget: one model request in all (whatever the model
asks for, however many conversations), a time limit after which it stops cleanly and says
so in memory.log, and a lowered priority."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest

from engine.memory import Completion, MemoryService, Watermarks
from engine.memory.reflect import reflect_conversation
from engine.messages import Message, ToolCall, assistant, user
from engine.paths import BrimPaths
from engine.store import MessageRecord
from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.engine.memory.test_session import _chat
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer

PREF = "I always prefer British spelling in everything you write."


def _records(texts: list[str]) -> list[MessageRecord]:
    out: list[MessageRecord] = []
    for text in texts:
        out.append(MessageRecord(len(out) + 1, user(text), None))
        out.append(MessageRecord(len(out) + 1, assistant("Noted."), None))
    return out


def _reflect(service: MemoryService, records: list[MessageRecord], complete: Any, **kw: Any):  # type: ignore[no-untyped-def]
    return asyncio.run(
        reflect_conversation(
            records,
            "c",
            service=service,
            scopes=service.scopes(None, None),
            complete=complete,
            count_text=lambda text: len(text.split()),
            window=1600,
            **kw,
        )
    )


def test_the_reflection_sends_one_request_even_to_a_model_that_keeps_calling_tools(
    service: MemoryService,
):
    calls: list[list[Message]] = []

    async def complete(
        messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        calls.append(messages)
        call = ToolCall(f"v{len(calls)}", "view_memory", {})
        return Completion("", (call,))

    texts = [f"Message {i}: " + "word " * 60 for i in range(30)]
    report = _reflect(service, _records(texts), complete)
    assert len(calls) == 1 and report.requests == 1
    assert report.prompt_tokens > 0 and not report.timed_out


def test_a_reflection_past_its_time_limit_stops_cleanly_and_says_so(
    service: MemoryService, caplog: pytest.LogCaptureFixture
):
    async def never_answers(
        messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        await asyncio.sleep(60)
        return Completion('{"memories": []}')

    records = _records([PREF, "Thanks, that is all."])
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        report = _reflect(service, records, never_answers, time_limit_s=0.5)
    assert time.monotonic() - started < 10
    assert report.timed_out and "time limit" in caplog.text
    # The user's own statement was still read, and the claim stands: the next reflection
    # does not spend the same time on the same messages.
    assert [s.quote for s in service.pending()] == [PREF] and report.queued
    assert Watermarks(service.layout).get("c") == records[-1].seq


def test_brim_memory_reflect_runs_at_low_priority_with_one_request_for_all_conversations(
    tmp_path: Path,
):
    model = FakeModel(extract=saving(Save(PREF, "spelling", "British spelling.")))
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        _, first = _chat(fake, tmp_path, ["Please keep answers short."], memory=True)
        _, second = _chat(fake, tmp_path, [PREF], memory=True)
        engine = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        ran = run_brim(
            ["memory", "reflect", "--conversation", first, "--conversation", second, *engine],
            data_dir=tmp_path,
        )
    assert ran.returncode == 0, ran.stderr
    assert len(model.seen["extractor"]) == 1  # the newest conversation's
    log = (BrimPaths.resolve(tmp_path).logs_dir / "memory.log").read_text(encoding="utf-8")
    niceness = re.search(r"running at niceness (\d+)", log)
    assert niceness is not None and int(niceness.group(1)) >= 10, log
    assert "memory reflect: 1 model request, " in log
    assert re.search(rf"reflect {second}: .* 1 model requests", log), log
