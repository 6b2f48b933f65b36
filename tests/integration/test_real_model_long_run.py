"""A long run on the real embedded model with a small window: the real model compacts."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.context.checkpoint import checkpoint_entries, stored_checkpoint
from engine.context.constants import COVERED_SECTION, STATED_SECTION
from engine.events import CompactionEvent, ErrorEvent, Event, UsageEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

WINDOW = 2048
# A fact the user states at the start: Brim carries it through the compaction in their own
# words, whatever the model's summary holds (the model's answers differ from one CPU to
# another, so nothing here depends on what it writes).
STATED = "I keep every build log for 30 days."


def test_a_long_run_on_the_embedded_model_compacts_with_the_real_model_and_never_overflows(
    tmp_path: Path,
):
    events: list[Event] = []
    agent = default_agent().with_changes(num_ctx=WINDOW, max_tokens=40)
    turns = [
        f"Note {i}: build server {i} runs job alpha-{i} every {i + 3} minutes and writes "
        f"its log to /var/log/job{i}.log. " * 3 + "Acknowledge briefly."
        for i in range(16)
    ]
    turns[0] = f"{STATED} {turns[0]}"

    async def run() -> str:
        session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
        await session.start()
        for text in turns:
            await session.send(text)
        await session.close()
        return session.conversation_id

    conversation = asyncio.run(run())

    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    prompts = [e.prompt_tokens for e in events if isinstance(e, UsageEvent)]
    assert len(prompts) == len(turns)
    assert max(p for p in prompts if p is not None) < WINDOW
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert finished, "the real model's summary was never accepted"
    with Store.open(BrimPaths.resolve(tmp_path).db_path) as store:
        live = store.messages(conversation)
        everything = store.messages(conversation, include_archived=True)
    summaries = [m for m in live if m.kind == "summary"]
    # The stored checkpoint keeps its sections; the model is shown it without headings.
    assert len(summaries) == 1 and "## Goal" in stored_checkpoint(summaries[0])
    assert "## " not in summaries[0].content
    assert STATED in summaries[0].content
    # What the model wrote stands only where the conversation holds it: no apology, no null
    # answer, no word of Brim's own prompt, no name the conversation never used.
    spoken = " ".join(m.content for m in everything if m.kind == "chat").casefold()
    for title, entries in checkpoint_entries(stored_checkpoint(summaries[0])).items():
        for entry in entries if title not in (STATED_SECTION, COVERED_SECTION) else ():
            assert not re.search(r"sorry|apologi|transcript|checkpoint", entry, re.I), entry
            assert entry.strip(" .").casefold() not in {"none", "n/a", "the user stated none"}
            for name in re.findall(r"(?<=[\w,] )[A-Z][\w-]+", entry):
                assert name.casefold() in spoken, (name, entry)
    # Compaction archived the originals; nothing the user said was lost from the record.
    said = {m.content for m in everything if m.role == "user"}
    assert all(text in said for text in turns)
