"""Every Ollama version, through the real session and agent loop: the count is the whole
prompt everywhere but 0.30.0, so Brim calibrates, fills `/usage` and flags a real cut on all
of them; and where the server takes `truncate: false`, a prompt that does not fit is an
overflow Brim compacts and retries, never a silent cut."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import (
    CompactionEvent,
    ContextEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
    UsageEvent,
    UsageReportEvent,
    WindowLearnedEvent,
)
from engine.paths import BrimPaths
from engine.providers.ollama import OllamaProvider
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeOllama, OllamaModel, Reply
from tests.helpers.fake_ollama import OUT_OF_MEMORY

MODEL = "qwen3:8b"
SUMMARY = (
    "## Goal\nTalk about the topics one by one.\n## Constraints & Preferences\n- none\n"
    "## Covered So Far\n- the earlier topics\n## Progress\n### Done\n- answered\n"
    "### In Progress\n- the current topic\n### Blocked\n- nothing\n## Key Decisions\n- none\n"
    "## Next Steps\n- keep going\n## Critical Context\n- none\n"
)
PROSE = (
    "the river carries silt past the old mill while herons wait in the shallows and the "
    "miller counts sacks of barley for the winter market"
)
WORDS = PROSE.split(" ")


def _prose(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


def _answers(request: Any) -> Reply:
    if is_compaction(request.body):
        return Reply(text=SUMMARY)
    return Reply(text=_prose(40, len(request.body["messages"])))


def _agent(fake: FakeOllama, **changes: Any) -> Any:
    return default_agent().with_changes(
        name="chat", provider="ollama", base_url=fake.url, model=MODEL, **changes
    )


def _run(
    agent: Any, home: Path, turns: list[str], *, provider: Any = None, conversation: str = ""
) -> tuple[list[Event], str]:
    events: list[Event] = []
    opened = ""

    async def go() -> None:
        nonlocal opened
        chat = ChatSession(
            agent,
            BrimPaths.resolve(home),
            events.append,
            provider=provider,
            conversation_id=conversation or None,
        )
        await chat.start()
        try:
            for text in turns:
                await chat.send(text)
            opened = chat.conversation_id
        finally:
            await chat.close()

    asyncio.run(go())
    return events, opened


def _of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _cut_warnings(events: list[Event]) -> list[str]:
    return [e.text for e in _of(events, NoticeEvent) if "truncated the prompt" in e.text]


@pytest.mark.parametrize("version", ["0.5.7", "0.24.0", "0.30.1", "0.33.0"])
def test_on_every_ollama_but_0_30_0_the_count_calibrates_and_fills_usage(
    tmp_path: Path, version: str
):
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], version=version) as fake:
        fake.responder = _answers
        turns = [f"Topic {i}: " + _prose(80, i) for i in range(3)] + ["/usage"]
        events, _ = _run(_agent(fake, num_ctx=16384), tmp_path, turns)
        sent = [r.prompt_tokens for r in fake.chat_requests]

    usage = _of(events, UsageEvent)
    assert [u.prompt_tokens for u in usage] == sent  # the engine's count, every request
    assert [c.estimated for c in _of(events, ContextEvent)] == [False] * len(sent)
    (report,) = _of(events, UsageReportEvent)
    assert report.report.total.prompt_tokens == sum(sent) > 0
    assert _cut_warnings(events) == []


@pytest.mark.parametrize(("version", "strict"), [("0.5.7", True), ("0.24.0", False)])
def test_on_an_ollama_that_cuts_silently_a_real_cut_is_flagged(
    tmp_path: Path, version: str, strict: bool
):
    """0.5.7 cannot be told not to cut; 0.24.0 can, but not by a provider built without
    strictness. Either way the count it reports shows the cut, and Brim says so once."""
    with FakeOllama(
        [OllamaModel(MODEL, context_length=40960)],
        default_num_ctx=2048,
        version=version,
        refuse_loads=OUT_OF_MEMORY,  # no load at the start: Brim assumes 4,096
    ) as fake:
        fake.responder = _answers
        provider = OllamaProvider(fake.url, strict=strict)
        turns = ["Read all of this: " + _prose(3000, 0), "What was it about?"]
        events, _ = _run(_agent(fake), tmp_path, turns, provider=provider)
        cut = [r for r in fake.chat_requests if r.truncated]

    assert len(cut) == 1
    assert len(_cut_warnings(events)) == 1
    assert _of(events, ErrorEvent) == []


def test_with_truncate_false_an_over_long_prompt_is_compacted_and_answered_not_cut(
    tmp_path: Path,
):
    """A conversation reopened on an Ollama that now loads the model with 2,048 tokens
    (OLLAMA_CONTEXT_LENGTH, or another machine): Brim assumes 4,096 until the first answer,
    so the first request does not fit. Ollama refuses it (400, with the sizes), and Brim
    compacts and retries in the same turn, where it used to be cut and answered."""
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], default_num_ctx=8192) as fake:
        fake.responder = _answers
        # ~2,500 tokens: under the compaction point of the 4,096 assumed, over 2,048.
        turns = [f"Topic {i}: " + _prose(220, i) for i in range(7)]
        _, conversation = _run(_agent(fake), tmp_path, turns)
        fake.loaded.clear()  # the model was unloaded (keep-alive), the default changed
        fake.default_num_ctx = 2048
        fake.refuse_loads = OUT_OF_MEMORY  # its load at the start fails: 4,096 is assumed
        fake.clear_requests()
        events, _ = _run(_agent(fake), tmp_path, ["And what now?"], conversation=conversation)
        requests = fake.chat_requests

    refused = [r for r in requests if r.prompt_tokens > r.window]
    assert refused, "the reopened conversation's first request must not fit 2,048"
    assert all(r.body["truncate"] is False and r.body["shift"] is False for r in requests)
    assert [r for r in requests if r.truncated] == []  # 0 prompts cut silently
    learned = _of(events, WindowLearnedEvent)
    assert [(e.new, e.cause) for e in learned][:1] == [(2048, "overflow")]
    assert [e.phase for e in _of(events, CompactionEvent)].count("finished") >= 1
    assert len(_of(events, TurnEndEvent)) == 1
    assert _of(events, ErrorEvent) == []
    assert _cut_warnings(events) == []
