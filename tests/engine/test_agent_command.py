"""`/agent` outside the desktop: a front end without the editor says where the agent lives,
and nothing goes to the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import load_agent
from engine.events import Event, NoticeEvent, ViewRequestEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeVllm


def _headless(tmp_path: Path, command: str) -> tuple[Path, list[Event]]:
    """`command` typed in a headless session of an agent file `q.toml`: the file's path and
    the events; the engine must have been sent nothing."""
    events: list[Event] = []
    with FakeVllm() as fake:
        path = tmp_path / "q.toml"
        path.write_text(
            f'name = "q"\nprovider = "vllm"\nbase_url = "{fake.url}"\nmodel = "{fake.model}"\n',
            encoding="utf-8",
        )
        session = ChatSession(load_agent(path), BrimPaths.resolve(tmp_path / "home"), events.append)

        async def go() -> None:
            await session.start()
            try:
                await session.send(command)
            finally:
                await session.close()

        asyncio.run(go())
        assert fake.chat_requests == []
    return path, events


def _notices(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, NoticeEvent)]


def test_slash_agent_in_a_headless_session_names_the_agent_file_and_sends_nothing(tmp_path):
    path, events = _headless(tmp_path, "/agent")
    assert any(str(path) in text for text in _notices(events))


def test_slash_agent_new_in_a_headless_session_names_the_agents_folder_and_sends_nothing(
    tmp_path,
):
    _, events = _headless(tmp_path, "/agent new")
    assert [e.view for e in events if isinstance(e, ViewRequestEvent)] == ["new_agent"]
    assert any(f"write a TOML file into {tmp_path}" in text for text in _notices(events))
