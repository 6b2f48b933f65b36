"""An edited stable prompt reaches an open conversation (seed 003, cache-friendly layout): it
is retained as a new system message, the history before it is sent as it was, and a
conversation whose prompt did not change sends its earlier request again byte for byte."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, default_agent
from engine.events import ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer

FIRST = "You are Brim. Answer in plain English."
EDITED = "You are Brim. Answer in plain English, and end every answer with the word OVER."


def _turn(
    agent: AgentConfig, home: BrimPaths, conversation: str | None, text: str, **kw: Any
) -> ChatSession:
    """One session on `conversation` (None: a new one), as the desktop reopens it with the
    saved agent: one message, then closed."""
    events: list[Event] = []

    async def go() -> ChatSession:
        session = ChatSession(agent, home, events.append, conversation_id=conversation, **kw)
        await session.start()
        await session.send(text)
        await session.close()
        return session

    session = asyncio.run(go())
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    return session


def _wire(body: dict[str, Any]) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in body["messages"]]


def _agent(fake: FakeLlamaServer, prompt: str) -> AgentConfig:
    return default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model=fake.model,
        system_prompt=prompt,
    )  # fmt: skip


def test_an_edited_system_prompt_is_in_the_next_request_and_the_history_goes_as_it_was(
    tmp_path: Path,
):
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        first = _turn(_agent(fake, FIRST), home, None, "What is a context window?")
        edited = _agent(fake, EDITED)
        _turn(edited, home, first.conversation_id, "And a token?")
        third = _turn(edited, home, first.conversation_id, "And a prompt cache?")
        before, after, later = (r.body for r in fake.chat_requests)
    system = after["messages"][0]
    assert system["role"] == "system" and EDITED in system["content"]
    assert system["content"].startswith(FIRST)  # the conversation's own prompt still leads
    assert [m["role"] for m in after["messages"]].count("system") == 1  # one, for any template
    # Everything after the system message is what the earlier request sent, byte for byte.
    assert _wire(after)[1 : len(before["messages"])] == _wire(before)[1:]
    # Kept as a message of its own: the next session finds it and adds no second copy.
    saved = [m for m in third.history() if m.role == "system"]
    assert len(saved) == 2 and saved[0].content == before["messages"][0]["content"]
    assert _wire(later)[: len(after["messages"])] == _wire(after)


def test_a_conversation_whose_prompt_did_not_change_resends_its_request_byte_for_byte(
    tmp_path: Path,
):
    home = BrimPaths.resolve(tmp_path / "home")
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Run the tests before you commit.\n")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = _agent(fake, FIRST)
        first = _turn(agent, home, None, "Hello.", workspace=workspace)
        resumed = _turn(agent, home, first.conversation_id, "Again.", workspace=workspace)
        before, after = (r.body for r in fake.chat_requests)
    assert _wire(after)[: len(before["messages"])] == _wire(before)
    assert before["tools"] == after["tools"]
    assert len([m for m in resumed.history() if m.role == "system"]) == 1


def test_changed_project_instructions_reach_the_open_conversation_too(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    workspace = tmp_path / "project"
    workspace.mkdir()
    rules = workspace / "AGENTS.md"
    rules.write_text("Run the tests before you commit.\n")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = _agent(fake, FIRST)
        first = _turn(agent, home, None, "Hello.", workspace=workspace)
        rules.write_text("Run the linter, then the tests, before you commit.\n")
        _turn(agent, home, first.conversation_id, "Again.", workspace=workspace)
        after = fake.chat_requests[-1].body
    assert "Run the linter, then the tests" in after["messages"][0]["content"]
