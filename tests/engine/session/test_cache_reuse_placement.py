"""A session asks its llama-server at the start whether it moves cached chunks, and the
checkpoint's place follows the answer: after the kept messages where the server moves them,
first where it cannot (moving it there buys nothing). `/context` says what was found."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.events import ContextReportEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel


def _started(url: str, model: str, provider: str, tmp_path: Path) -> tuple[bool, list[str]]:
    """Whether the session's compactions lay the checkpoint after the kept messages, and
    what its `/context` answer says."""
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="chat", provider=provider, base_url=url, model=model, num_ctx=4096
    )
    session = ChatSession(agent, BrimPaths.resolve(tmp_path / "home"), events.append)

    async def go() -> bool:
        await session.start()
        try:
            await session.send("/context")
            return session._agent_loop().context.checkpoint_after_kept
        finally:
            await session.close()

    after_kept = asyncio.run(go())
    (answer,) = [e for e in events if isinstance(e, ContextReportEvent) and e.snapshot]
    return after_kept, answer.report.lines()


@pytest.mark.parametrize(
    ("can_shift", "after_kept", "said"),
    [(True, True, "yes (probed)"), (False, False, "no (probed)")],
)
def test_the_checkpoint_follows_the_kept_messages_only_where_the_server_moves_them(
    tmp_path: Path, can_shift: bool, after_kept: bool, said: str
):
    with FakeLlamaServer(can_shift=can_shift) as fake:
        placed, lines = _started(fake.url, fake.model, "llamacpp", tmp_path)
        probes = len(fake.requests_to("/completion"))
    assert placed is after_kept
    assert f"Cache reuse at new positions: {said}" in lines
    assert probes == 2  # asked once, at the start


def test_an_engine_with_no_probe_puts_the_checkpoint_first_and_says_not_probed(tmp_path: Path):
    with FakeOllama([OllamaModel("llama3.1:8b")]) as fake:
        placed, lines = _started(fake.url, "llama3.1:8b", "ollama", tmp_path)
    assert placed is False
    assert "Cache reuse at new positions: not probed" in lines
