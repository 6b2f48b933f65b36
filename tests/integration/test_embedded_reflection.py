"""On the embedded engine, reflection waits for the session to close: a reflection loads its
own copy of the model, and two copies at once can be more than the machine has."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.memory import MemoryService
from engine.paths import BrimPaths
from engine.session import ChatSession

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _reflected(service: MemoryService) -> set[str]:
    path = service.layout.watermark_path
    if not path.exists():
        return set()
    return set(json.loads(path.read_text(encoding="utf-8")).get("conversations", {}))


def test_leaving_conversations_on_the_embedded_engine_reflects_once_on_close(tmp_path: Path):
    paths = BrimPaths.resolve(tmp_path)
    service = MemoryService.for_paths(paths)
    agent = default_agent().with_changes(num_ctx=2048, max_tokens=12)

    async def run() -> list[str]:
        session = ChatSession(agent, paths, lambda _e: None, memory=True, reflect_on_close=True)
        await session.start()
        await session.send("I always prefer British spelling in everything you write.")
        first = session.conversation_id
        await session.open_conversation(None)
        await session.send("Please keep every answer short.")
        second = session.conversation_id
        await session.close()
        return [first, second]

    conversations = asyncio.run(run())
    deadline = time.monotonic() + 300
    while not set(conversations) <= _reflected(service) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert set(conversations) <= _reflected(service)
    # One process (one model load) reflected on both, after the session let its model go.
    lines = (tmp_path / "logs" / "memory.log").read_text(encoding="utf-8").splitlines()
    pids = {line.split()[2] for line in lines if " memory reflect " in line}
    assert len(pids) == 1, lines
