"""What the model saw (issue 44): `/context show` answers with the exact last request, each
part's tokens and what changed since the request before; each request tells where it
starts in the conversation, so a transcript can dim what was compacted away."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, default_agent
from engine.context.replay import Replay
from engine.events import CompactionEvent, Event, LastRequestEvent, RequestViewEvent
from engine.messages import Message, model_messages, system, user
from engine.paths import BrimPaths
from engine.report.last_request import request_changes
from engine.session import ChatSession
from tests.engine.session.test_reopen_sends_the_same import Summarizer, _long
from tests.helpers.fake_engines import FakeLlamaServer
from tests.helpers.fake_provider import InProcessEngine

AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")


def _run(engine: InProcessEngine, home: Path, texts: list[str], events: list[Event]) -> ChatSession:
    async def go() -> ChatSession:
        session = ChatSession(AGENT, BrimPaths.resolve(home), events.append, provider=engine)
        await session.start()
        for text in texts:
            await session.send(text)
        await session.close()
        return session

    return asyncio.run(go())


def _views(events: list[Event]) -> list[RequestViewEvent]:
    return [e for e in events if isinstance(e, RequestViewEvent)]


def _part(view: RequestViewEvent, name: str) -> dict[str, Any]:
    return next(p for p in view.parts if p["part"] == name)


def test_context_show_gives_the_exact_last_request_its_parts_and_what_it_added(tmp_path: Path):
    engine = InProcessEngine(window=8192)
    events: list[Event] = []
    _run(engine, tmp_path, ["I grow tomatoes.", "Which soil suits them?", "/context show"], events)

    (view,) = _views(events)
    sent = engine.requests[-1].messages
    assert view.sent and view.compared
    assert [(m["role"], m["content"]) for m in view.messages] == [(m.role, m.content) for m in sent]
    assert _part(view, "kept")["messages"] == 2  # the first question and its answer
    assert _part(view, "new")["messages"] == 1
    assert "Which soil suits them?" in view.messages[-1]["content"]
    assert sum(p["tokens"] for p in view.parts) == view.counted_tokens > 0
    assert view.engine_tokens > 0
    added = [(c["change"], c["role"]) for c in view.changes]
    assert added == [("added", "assistant"), ("added", "user")]
    assert view.rendered == ""  # the in-process engine renders nothing: its messages say it


def test_before_any_request_context_show_says_nothing_was_sent(tmp_path: Path):
    events: list[Event] = []
    _run(InProcessEngine(window=8192), tmp_path, ["/context show"], events)
    (view,) = _views(events)
    assert not view.sent and view.messages == []


def test_after_a_compaction_the_request_starts_at_the_first_kept_message(tmp_path: Path):
    engine = InProcessEngine(window=2048)
    engine.responder = Summarizer()
    events: list[Event] = []

    async def go() -> tuple[list[Message], list[Message]]:
        session = ChatSession(AGENT, BrimPaths.resolve(tmp_path), events.append, provider=engine)
        await session.start()
        for i in range(30):
            await session.send(_long(i))
            if any(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events):
                break
        await session.send("Which bed gets the most sun?")
        await session.send("/context show")
        history, transcript = session.history(), session.transcript()
        await session.close()
        return history, transcript

    history, transcript = asyncio.run(go())
    cut = [e for e in events if isinstance(e, LastRequestEvent)][-1]
    kept = [m for m in model_messages(history) if m.role != "system" and m.kind != "summary"]
    assert cut.first_message == kept[0].id
    first_user = next(m for m in transcript if m.role == "user")
    assert cut.first_message != first_user.id  # the messages above it were compacted away
    users = [m for m in kept if m.role == "user" and m.kind != "continuation"]
    assert cut.user_turns_from == len(users)
    view = _views(events)[-1]
    assert _part(view, "checkpoint")["tokens"] > 0
    assert sum(p["tokens"] for p in view.parts) == view.counted_tokens
    # The system prompt is counted as itself, not less the checkpoint that follows it.
    prompt = next(m for m in history if m.role == "system" and m.kind != "summary")
    assert prompt.content in view.messages[0]["content"]
    assert _part(view, "system")["tokens"] >= len(prompt.content.split())


def test_the_request_after_a_compaction_lists_the_messages_it_no_longer_carries(tmp_path: Path):
    engine = InProcessEngine(window=8192)
    events: list[Event] = []
    texts = [f"Bed {i} has clay. " + "The soil is heavy. " * 40 for i in range(12)]
    _run(engine, tmp_path, [*texts, "/compact", "Which bed is driest?", "/context show"], events)
    view = _views(events)[-1]
    removed = [c for c in view.changes if c["change"] == "removed"]
    assert removed and all(c["position"] == -1 and c["was"] >= 0 for c in removed)
    assert any("Bed 0 has clay." in c["preview"] for c in removed)
    assert _part(view, "checkpoint")["messages"] == 1


def test_a_message_that_changed_places_is_moved_not_added():
    head, a, b, c = system("You help."), user("a"), user("b"), user("c")
    before = Replay((head, a, b, c), (), 10)
    after = Replay((head, b, a, c), (), 10)
    changes = request_changes(before, after)
    assert [ch.change for ch in changes] == ["moved"]
    assert changes[0].id in (a.id, b.id)


def test_kept_messages_that_only_slid_up_are_neither_moved_nor_removed():
    """A compaction drops the oldest turns; the answers all read "Noted.": the kept ones are
    the same messages, not the first "Noted." the request before carried."""
    from engine.messages import assistant

    head = system("You help.")
    turns = [(user(f"q{i}"), assistant("Noted.")) for i in range(4)]
    before = Replay((head, *[m for t in turns for m in t]), (), 10)
    new = user("q4")
    after = Replay((head, *turns[2], *turns[3], new), (), 10)
    changes = request_changes(before, after)
    by_kind = {(ch.change, ch.id) for ch in changes}
    gone = {m.id for t in turns[:2] for m in t}
    assert by_kind == {("added", new.id), *(("removed", i) for i in gone)}
    # The same, where the wire carries copies of the answers (new ids, same words).
    copies = (turns[2][0], assistant("Noted."), turns[3][0], assistant("Noted."), new)
    changes = request_changes(before, Replay((head, *copies), (), 10))
    assert sorted(ch.change for ch in changes) == [
        "added",
        "removed",
        "removed",
        "removed",
        "removed",
    ]


def test_a_llama_server_request_is_shown_as_its_apply_template_rendered_it(tmp_path: Path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def go() -> None:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
            await session.start()
            await session.send("Where do peppers grow best?")
            await session.send("/context show")
            for _ in range(200):  # the server renders it: the answer follows
                if _views(events):
                    break
                await asyncio.sleep(0.01)
            await session.close()

        asyncio.run(go())
        body = fake.chat_requests[-1].body
        assert isinstance(body, dict)
        (view,) = _views(events)
        assert view.rendered_by == "llama-server's /apply-template"
        assert view.rendered == fake.render(
            {"messages": body["messages"], "tools": body.get("tools")}
        )
        assert "Where do peppers grow best?" in view.rendered
