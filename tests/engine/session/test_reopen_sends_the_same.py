"""A compacted conversation opened again sends what it sent before it was left (issue 41).

Through the real session on the in-process engine, a tool-less agent (no folder) on a small
window: two compactions, so the journal holds a record of a checkpoint the history no longer
carries as such (the live checkpoint merged it). Leaving the conversation (for another, or by
closing Brim) and coming back must not add the journal again: the live checkpoint already
carries it, so the request is the same, token for token, and nothing in it asks a model
without tools to read files.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import AgentConfig, default_agent
from engine.context import Journal
from engine.context.model_face import summary_message
from engine.context.work_state import PREAMBLE_HEAD
from engine.events import CompactionEvent, Event
from engine.messages import Message, model_messages
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, StreamItem
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.fake_provider import Answer, InProcessEngine, Request
from tests.helpers.scripted_session import is_summary_request

WINDOW = 2048
AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")


class Summarizer:
    """The agent's model, and its summarizer: each compaction's checkpoint names what that
    stretch did (a new Done entry, new next steps), as a summarizer that read it would."""

    def __init__(self) -> None:
        self.compactions = 0

    def __call__(self, request: Request) -> Answer:
        if not is_summary_request(request):
            return Answer(f"Noted, answer {len(request.messages)}.")
        self.compactions += 1
        n = self.compactions
        return Answer(
            f"## Goal\n- Plan the garden beds.\n## Progress\n### Done\n- planned bed {n}\n"
            f"### In Progress\n- choosing seeds for bed {n + 1}\n"
            f"## Next Steps\n- plan bed {n + 1}\n## Critical Context\n- beds face south\n"
        )


def _long(i: int) -> str:
    return f"Bed {i}: " + "the soil there is heavy clay with some sand " * 25


def _sent(history: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in model_messages(history)]


def _journal(home: BrimPaths, conversation: str) -> list[dict[str, object]]:
    return Journal(home.conversation_dir(AGENT.name, conversation) / "journal.jsonl").read()


@pytest.mark.parametrize("how", ["switch", "restart"])
def test_a_reopened_compacted_conversation_sends_the_same_tokens_and_asks_no_file_reading(
    tmp_path: Path, how: str
):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = InProcessEngine(window=WINDOW)
    engine.responder = Summarizer()
    events: list[Event] = []

    async def go() -> tuple[int, int, list[tuple[str, str]], list[tuple[str, str]], str]:
        session = ChatSession(AGENT, home, events.append, provider=engine)
        await session.start()
        for i in range(30):
            await session.send(_long(i))
            done = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
            if len(done) >= 2:
                break
        await session.send("Which bed gets the most sun?")
        before, history = session.context_report().used, _sent(session.history())
        first = session.conversation_id
        if how == "switch":
            await session.open_conversation(None)
            await session.send("A different question about tomatoes.")
            await session.open_conversation(first)
        else:
            await session.close()
            session = ChatSession(AGENT, home, events.append, provider=engine,
                                  conversation_id=first)  # fmt: skip
            await session.start()
        after, reopened = session.context_report().used, _sent(session.history())
        await session.send("And which bed is driest?")
        await session.close()
        return before, after, history, reopened, first

    before, after, history, reopened, conversation = asyncio.run(go())
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 2 and len(_journal(home, conversation)) >= 2
    print(f"\nnext request before leaving: {before} tokens, after reopening: {after}")
    assert after == before  # ±0
    assert reopened == history  # nothing added, nothing lost
    last = engine.requests[-1]
    assert [(m.role, m.content) for m in last.messages][-1][1].endswith("And which bed is driest?")
    wire = "\n".join(m.content for m in last.messages)
    assert PREAMBLE_HEAD not in wire
    assert "read the files" not in wire and "re-run" not in wire


def test_an_agent_with_tools_gets_what_the_journal_adds_and_the_checks_to_run(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    engine = InProcessEngine(window=8192)

    async def run(conversation: str | None, texts: list[str]) -> ChatSession:
        session = ChatSession(AGENT, home, lambda _e: None, provider=engine,
                              conversation_id=conversation, workspace=workspace)  # fmt: skip
        await session.start()
        for text in texts:
            await session.send(text)
        await session.close()
        return session

    first = asyncio.run(run(None, ["Migrate the routes."])).conversation_id
    live = summary_message("## Goal\n- Migrate the routes.\n## Done\n- moved /api/users\n")
    store = Store.open(home.ensure().db_path)
    store.replace_messages(first, [*store.messages(first), live])
    store.close()
    journal = Journal(home.conversation_dir(AGENT.name, first) / "journal.jsonl")
    journal.append({"summary": "## Done\n- moved /api/users\n", "checkpoint": live.id})
    # A record an older Brim wrote (it names no checkpoint): weighed entry by entry.
    journal.append(
        {
            "summary": "## Done\n- moved /api/users\n- wrote the migration script\n"
            "## Next Steps\n- move /api/users\n"
        }
    )
    asyncio.run(run(first, ["Go on."]))
    sent = engine.requests[-1]
    wire = "\n".join(m.content for m in sent.messages)
    assert "read_file" in {t["function"]["name"] for t in sent.options.tools}
    assert wire.count(PREAMBLE_HEAD) == 1 and "verify them (read the files" in wire
    assert "wrote the migration script" in wire
    assert "Next: move /api/users" not in wire  # superseded: it was done since
    assert wire.count("moved /api/users") == 1  # the live checkpoint's, not again


class RecordingEmbedded(EmbeddedProvider):
    """The embedded engine (the bundled model), keeping every request it was given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[list[Message]] = []

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        self.requests.append(list(messages))
        async for item in super().stream_chat(model, messages, options):
            yield item


@pytest.mark.slow
@pytest.mark.timeout(1500)  # two compactions of the real model: minutes on a loaded CPU
@pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed")
def test_the_bundled_model_reopened_after_compaction_is_sent_the_same_tokens(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    provider = RecordingEmbedded(n_ctx=1024)
    agent = default_agent().with_changes(num_ctx=1024, max_tokens=8)
    events: list[Event] = []

    async def go() -> tuple[int, int, list[tuple[str, str]], list[tuple[str, str]]]:
        session = ChatSession(agent, home, events.append, provider=provider)
        await session.start()
        for i in range(12):
            await session.send(f"Note {i}: my bed {i} gets sun until {i + 1} pm. " + "ok " * 180)
            done = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
            if len(done) >= 2:
                break
        before, history = session.context_report().used, _sent(session.history())
        first = session.conversation_id
        await session.open_conversation(None)
        await session.open_conversation(first)
        after, reopened = session.context_report().used, _sent(session.history())
        await session.send("Which bed gets the most sun?")
        await session.close()
        return before, after, history, reopened

    before, after, history, reopened = asyncio.run(go())
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    print(f"\nbundled model, 1K window, {len(finished)} compactions: next request "
          f"{before} tokens before leaving, {after} after reopening")  # fmt: skip
    print("sent after reopening:\n" + "\n".join(f"[{m.role}] {m.content}"
                                              for m in provider.requests[-1]))  # fmt: skip
    assert finished
    assert after == before and reopened == history
    wire = "\n".join(m.content for m in provider.requests[-1])
    assert PREAMBLE_HEAD not in wire and "read the files" not in wire
