"""The memory section of the system prompt is worded for whether the request carries tools
(issue 41): a tool-less agent is not told to use view_memory, a tooled one still is, and a
saved conversation keeps the prompt it was written with unless something else changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import AgentConfig
from engine.memory import MemoryService
from engine.memory.observe import STANDING_INTRO, STANDING_INTRO_NO_TOOLS
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.fake_provider import InProcessEngine

AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")


def _remember(home: BrimPaths) -> None:
    folder = MemoryService.for_paths(home).layout.global_scope().folder
    folder.mkdir(parents=True)
    (folder / "spelling.md").write_text("The user prefers British spelling.\n", encoding="utf-8")


def _turn(home: BrimPaths, engine: InProcessEngine, conversation: str | None, **kw: Any) -> str:
    async def go() -> str:
        session = ChatSession(AGENT, home, lambda _e: None, provider=engine,
                              conversation_id=conversation, memory=True, **kw)  # fmt: skip
        await session.start()
        await session.send("Hello.")
        await session.close()
        return session.conversation_id

    return asyncio.run(go())


def _systems(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "system"]


def test_the_memory_section_names_view_memory_only_where_the_request_carries_it(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    _remember(home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    engine = InProcessEngine()
    _turn(home, engine, None)
    _turn(home, engine, None, workspace=workspace)
    tool_less, tooled = engine.requests
    assert STANDING_INTRO_NO_TOOLS in tool_less.messages[0].content
    assert "view_memory" not in tool_less.messages[0].content and not tool_less.options.tools
    assert STANDING_INTRO in tooled.messages[0].content  # the tooled prompt is as it was


def test_a_conversation_that_loses_its_tools_is_told_its_memory_without_them(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    _remember(home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    engine = InProcessEngine()
    conversation = _turn(home, engine, None, workspace=workspace)
    _turn(home, engine, conversation)  # opened again without the folder: no tools
    system = engine.requests[-1].messages[0].content  # the change joins the system message
    changed = system[system.index("The instructions above were changed") :]
    assert STANDING_INTRO_NO_TOOLS in changed and "view_memory" not in changed


def test_a_prompt_an_older_brim_wrote_is_kept_as_it_is_not_changed_again(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    _remember(home)
    engine = InProcessEngine()
    conversation = _turn(home, engine, None)
    # As an older Brim wrote it: the tool-less prompt with the memory line of a tooled one.
    store = Store.open(home.ensure().db_path)
    saved = store.messages(conversation)
    old = saved[0].content.replace(STANDING_INTRO_NO_TOOLS, STANDING_INTRO)
    assert old != saved[0].content
    store.replace_messages(conversation, [Message("system", old), *saved[1:]])
    store.close()
    _turn(home, engine, conversation)
    assert _systems(engine.requests[-1].messages) == [old]  # no change message, same prefix
