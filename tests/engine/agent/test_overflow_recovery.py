"""The engine rejects a request as too long: compact, retry once, and never lose the chat."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
)
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _run(
    fake: FakeLlamaServer, home: Path, turns: list[str], pin: int | None = None
) -> tuple[list[Event], str]:
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake", num_ctx=pin
    )

    async def go() -> str:
        session = ChatSession(agent, BrimPaths.resolve(home), events.append)
        await session.start()
        for text in turns:
            await session.send(text)
        await session.close()
        return session.conversation_id

    return events, asyncio.run(go())


def _long_history() -> list[str]:
    return [f"Message {i}: " + "words " * 120 for i in range(12)]


def test_a_pin_above_the_slot_yields_to_the_slot_so_the_ladder_compacts_before_any_rejection(
    tmp_path: Path,
):
    """The agent's pin says 100K but the server's slot holds 1,500: Brim accounts against the
    slot from the start (with a warning), so it compacts before the server has to reject."""

    def respond(request):  # type: ignore[no-untyped-def]
        return Reply(text=SUMMARY if is_compaction(request.body) else "ok")

    with FakeLlamaServer(n_ctx=1500, slots=1) as fake:
        fake.responder = respond
        events, _ = _run(fake, tmp_path, [*_long_history(), "And the final question?"], 100_000)
        rejected = fake.rejections
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    assert "preflight" in [c.reason for c in compactions if c.phase == "finished"]
    assert rejected == []
    # The pin's refusal is said once, as a notice with its figures (and saved as a row).
    refused = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "pin_not_honoured"]
    assert len(refused) == 1
    assert "100,000" in refused[0].text and "per slot" in refused[0].text
    assert (refused[0].details["asked"], refused[0].details["allocated"]) == (100_000, 1500)
    told = [e.text for e in events if isinstance(e, NoticeEvent)]
    assert [t for t in told if "per slot" in t] == [refused[0].text], told
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 13


def test_an_engine_that_always_rejects_gives_a_clear_error_and_keeps_the_conversation(
    tmp_path: Path,
):
    with FakeLlamaServer(n_ctx=100_000, slots=1) as fake:
        for _ in range(3):
            fake.script_reply("ok")
        fake.responder = lambda request: Reply(fail="overflow")
        turns = ["first " * 50, "second " * 50, "third " * 50, "this one is rejected", "again"]
        events, conversation = _run(fake, tmp_path, turns)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    # Both later turns failed cleanly: the session kept reading after the first failure.
    assert [e.kind for e in errors] == ["context_overflow", "context_overflow"]
    assert "too long" in errors[0].message
    store = Store.open(BrimPaths.resolve(tmp_path).db_path)
    try:
        everything = store.messages(conversation, include_archived=True)
    finally:
        store.close()
    sent = [m.content for m in everything if m.role == "user"]
    for text in turns:
        assert text in sent
