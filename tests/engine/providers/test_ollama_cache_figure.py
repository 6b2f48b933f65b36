"""Ollama 0.33.3 and later report what the prompt cache served (`prompt_eval_cached_count`):
a chat session's timeline then says "reused N of M" for a follow-up, and "cache: not
reported" on an older Ollama, where the figure does not exist (not 0)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.events import ContextReportEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeOllama, OllamaModel

MODEL = "llama3.1:8b"


def _timeline_rows(version: str, tmp_path: Path) -> list[str]:
    events: list[Event] = []
    with FakeOllama([OllamaModel(MODEL)], version=version) as fake:
        fake.default_reply.text = "Noted."
        agent = default_agent().with_changes(
            name="chat", provider="ollama", base_url=fake.url, model=MODEL
        )
        session = ChatSession(agent, BrimPaths.resolve(tmp_path / "home"), events.append)

        async def go() -> None:
            await session.start()
            try:
                await session.send("My name is Ada and I live in Lisbon.")
                await session.send("What city do I live in?")
            finally:
                await session.close()

        asyncio.run(go())
    reports = [e.report for e in events if isinstance(e, ContextReportEvent)]
    return [point.row() for point in reports[-1].timeline]


def test_ollama_0_33_3_shows_the_reused_tokens_in_the_timeline(tmp_path):
    rows = _timeline_rows("0.33.3", tmp_path)
    follow_up = re.fullmatch(r"request (\d+) · reused (\d+) of (\d+)", rows[-1])
    assert follow_up is not None, rows
    assert 0 < int(follow_up.group(2)) < int(follow_up.group(3))


@pytest.mark.parametrize("version", ["0.33.2", "0.30.1"])
def test_an_older_ollama_reads_not_reported(tmp_path, version):
    rows = _timeline_rows(version, tmp_path)
    assert rows and all(row.endswith("cache: not reported") for row in rows), rows
