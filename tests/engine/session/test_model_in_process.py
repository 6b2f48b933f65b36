"""What the session does for an engine whose model Brim loads into its own process (the
embedded engine says so with `loads_model_in_process`), asked of the provider, not of the
agent's provider name: "loading model" while it starts, and reflections held until close,
where each one loads a second copy of the model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import AgentConfig
from engine.events import Event, StateEvent
from engine.memory.steps import Reflections
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine


class InProcessModel(InProcessEngine):
    """The in-process engine, saying its model lives in Brim's process."""

    loads_model_in_process = True


def _states(engine: InProcessEngine, tmp_path: Path) -> list[str]:
    events: list[Event] = []
    # The agent names an HTTP engine: only the provider knows where its model lives.
    config = AgentConfig(name="t", provider="llamacpp", model="fake-model")
    session = ChatSession(
        config, BrimPaths.resolve(tmp_path / "home"), events.append, provider=engine
    )

    async def run() -> None:
        await session.start()
        await session.close()

    asyncio.run(run())
    return [e.state for e in events if isinstance(e, StateEvent)]


def test_loading_model_is_said_for_a_model_in_brims_process_and_only_for_it(tmp_path: Path):
    assert "loading model" in _states(InProcessModel(), tmp_path / "a")
    assert "loading model" not in _states(InProcessEngine(), tmp_path / "b")


class SpawnRecorder:
    def __init__(self) -> None:
        self.spawned: list[list[str]] = []

    def spawn_reflection(self, agent: Any, *, data_dir: Any, conversations: list[str]) -> None:
        self.spawned.append(list(conversations))


@pytest.mark.parametrize("in_process", [True, False])
def test_reflections_wait_for_close_only_when_the_model_is_in_brims_process(
    tmp_path: Path, in_process: bool
):
    memory = SpawnRecorder()
    reflections = Reflections()
    agent = AgentConfig(name="t", provider="embedded" if not in_process else "llamacpp")
    paths = BrimPaths.resolve(tmp_path)

    async def leave(conversation: str, *, closing: bool) -> None:
        reflections.had_turn = True
        await reflections.on_leaving(
            memory,  # type: ignore[arg-type]
            conversation,
            agent=agent,
            paths=paths,
            closing=closing,
            model_in_process=in_process,
        )

    async def run() -> None:
        await leave("c1", closing=False)
        await leave("c2", closing=False)
        await leave("c3", closing=True)

    asyncio.run(run())
    if in_process:  # one reflection over all three, loading the model once
        assert memory.spawned == [["c1", "c2", "c3"]]
    else:
        assert memory.spawned == [["c1"], ["c2"], ["c3"]]
