"""One command router, in the engine: `route(text)` says what a submitted text is, and the
session follows it; a command whose answer is a view comes back as a ViewRequestEvent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.commands import (
    COMMANDS,
    NOTICE_VIEW_FALLBACK,
    VIEWS,
    Action,
    route,
)
from engine.config import default_agent
from engine.events import Event, NoticeEvent, ViewRequestEvent, WindowEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer


@pytest.mark.parametrize(
    ("text", "action", "view", "while_busy"),
    [
        ("hello", Action.MESSAGE, "", False),
        ("please /compact", Action.MESSAGE, "", False),
        ("/context", Action.REPORT, "", True),
        ("  /work   clear ", Action.REPORT, "", True),
        ("/compact", Action.COMPACT, "", False),
        ("/learn", Action.LEARN, "", False),
        ("/reflect", Action.LEARN, "", False),
        ("/agent", Action.VIEW, "agent_editor", True),
        ("/memory", Action.VIEW, "memory_browser", True),
        ("/memory review", Action.VIEW, "memory_review", True),
        ("/new", Action.VIEW, "new_conversation", False),
    ],
)
def test_route_says_what_a_text_is(text, action, view, while_busy):
    decision = route(text)
    assert (decision.action, decision.view, decision.while_busy) == (action, view, while_busy)
    assert decision.is_message is (action is Action.MESSAGE)
    assert (decision.command is None) is decision.is_message


def test_every_command_has_a_route_and_every_view_a_command():
    decisions = [route(c.text) for c in COMMANDS]
    assert all(d.command is not None and not d.is_message for d in decisions)
    assert sorted(d.view for d in decisions if d.action is Action.VIEW) == sorted(VIEWS)


def test_a_headless_session_asks_for_the_view_and_keeps_its_words(tmp_path: Path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=4096) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )
        session = ChatSession(agent, BrimPaths.under(tmp_path), events.append, memory=True)

        async def go() -> None:
            await session.start()
            events.clear()
            for text in ("/agent", "/memory", "/memory review", "/new"):
                await session.send(text)
            await session.close()

        asyncio.run(go())
        assert fake.chat_requests == []
    views = [e.view for e in events if isinstance(e, ViewRequestEvent)]
    assert views == ["agent_editor", "memory_browser", "memory_review", "new_conversation"]
    fallbacks = [e for e in events if isinstance(e, NoticeEvent) and e.kind]
    assert [e.kind for e in fallbacks] == [NOTICE_VIEW_FALLBACK] * 3
    assert [e.details["view"] for e in fallbacks] == views[:3]
    assert fallbacks[0].text.startswith("Edit the agent in Brim's desktop or in ")
    assert fallbacks[1].text == "Review memory with `brim memory review`."
    # /new then opened another conversation, as it always did without a window.
    new = next(i for i, e in enumerate(events) if getattr(e, "view", "") == "new_conversation")
    assert any(isinstance(e, WindowEvent) for e in events[new:])


def test_a_headless_chat_prints_its_words_for_a_view_and_no_view_request(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096) as fake:
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="/agent\n/memory review\n",
        )
        assert fake.chat_requests == []
    assert run.of_type("view_request") == []
    words = [e["text"] for e in run.of_type("notice") if e.get("kind") == NOTICE_VIEW_FALLBACK]
    assert len(words) == 2 and words[0].startswith("Edit the agent in Brim's desktop or in ")
    assert words[1] == "Review memory with `brim memory review`."


def test_the_headless_output_leaves_the_view_request_to_its_words(capsys):
    from engine.cli.stdio import HeadlessOutput

    output = HeadlessOutput()
    output.write(ViewRequestEvent("memory_review"))
    output.write(NoticeEvent("info", "Review memory with `brim memory review`."))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and '"type": "notice"' in lines[0]
