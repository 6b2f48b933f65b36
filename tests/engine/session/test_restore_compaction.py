"""Reversible compaction: what a compaction replaced stays in the store under its id, and
`/compaction show N` / `/compaction restore N` put it back (a real store, a fake
llama-server)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.context.summarizer import GUIDED_SYSTEM, REPLAY_QUESTION_MARK
from engine.events import (
    NOTICE_RESTORE_UNCONFIRMED,
    NOTICE_RESTORED,
    CompactionEvent,
    CompactionListEvent,
    CompactionRestoredEvent,
    CompactionViewEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
)
from engine.messages import Message, assistant, model_messages, system, user
from engine.paths import BrimPaths
from engine.session import ChatSession, Conversation
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _summary(body: dict[str, Any]) -> str:
    """SUMMARY, its Goal the first words the user wrote in what it summarizes: a
    line the conversation supports, as a checkpoint's must be to enter it."""
    messages = body["messages"]
    fenced = re.search(r"^\[user\]\n(.+)$", str(messages[-1].get("content", "")), re.MULTILINE)
    said = fenced.group(1) if fenced else next(
        (str(m.get("content", "")) for m in messages[1:-1] if m.get("role") == "user"), ""
    )  # fmt: skip
    return SUMMARY.replace("Chat.", " ".join(said.split()[:3]) or "Chat.")


WORDS = "words " * 100


def _is_guided(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    first = str(messages[0].get("content", "")) if messages else ""
    last = str(messages[-1].get("content", "")) if messages else ""
    return first == GUIDED_SYSTEM or REPLAY_QUESTION_MARK in last


def _respond(request: Any) -> Reply:
    if _is_guided(request.body):
        return Reply(text="The user sends numbered messages.")
    return Reply(text=_summary(request.body) if is_compaction(request.body) else "ok")


def _session(fake: Any, home: Path, events: list[Event], **kw: Any) -> ChatSession:
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
    )
    return ChatSession(agent, BrimPaths.resolve(home), events.append, **kw)


def _drive(session: ChatSession, script: Callable[[ChatSession], Awaitable[None]]) -> None:
    async def go() -> None:
        await session.start()
        try:
            await script(session)
        finally:
            await session.close()

    asyncio.run(go())


def _compactions(events: list[Event]) -> list[CompactionEvent]:
    return [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]


async def _until_compacted(s: ChatSession, events: list[Event], limit: int = 20) -> None:
    for i in range(limit):
        await s.send(f"Message {i}: {WORDS}")
        if _compactions(events):
            return
    raise AssertionError("no compaction happened")


def _chat_texts(history: list[Message]) -> list[str]:
    return [m.content.split(":")[0] for m in history if m.role == "user" and m.kind == "chat"]


def _of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def test_a_compactions_replaced_messages_stay_in_the_store_under_its_id(tmp_path: Path):
    conversation = Conversation(BrimPaths.resolve(tmp_path / "home"), "chat")
    conversation.open_store()
    conversation.create(None)
    first = [system("You help."), user("I am going to Lisbon."), assistant("Nice.")]
    later = [user("With my sister."), assistant("Lovely.")]
    for message in [*first, *later]:
        conversation.append(message)
    checkpoint = Message(role="system", content="## Goal\nA trip.", kind="summary")
    note = Message(role="user", content="[continue]", kind="continuation")
    conversation.replace([first[0], checkpoint, note, *later])

    store = conversation.store
    assert store is not None
    (record,) = store.compactions(conversation.id)
    assert (record.number, record.id, record.replaced, record.restored) == (
        1,
        checkpoint.id,
        2,
        None,
    )
    replaced = store.compaction_messages(conversation.id, checkpoint.id)
    assert [m.content for m in replaced] == ["I am going to Lisbon.", "Nice."]
    assert store.history_before(conversation.id, checkpoint.id) == [m.id for m in [*first, *later]]
    conversation.close()


def test_restore_puts_a_compactions_messages_back_in_order_and_it_lasts(tmp_path: Path):
    events: list[Event] = []
    home = tmp_path / "home"
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        before: list[Message] = []
        after: list[Message] = []

        async def script(s: ChatSession) -> None:
            await _until_compacted(s, events)
            before.extend(s.history())
            await s.send("/compaction")
            await s.send("/compaction show 1")
            await s.send("/compaction restore 1 anyway")
            after.extend(s.history())

        session = _session(fake, home, events)
        _drive(session, script)
        conversation_id = session.conversation_id

        (listed,) = _of(events, CompactionListEvent)
        compaction = _compactions(events)[0].compaction
        assert [(c["number"], c["id"], c["restored"], c["live"]) for c in listed.compactions] == [
            (1, compaction, False, True)
        ]
        (view,) = _of(events, CompactionViewEvent)
        assert (view.compaction, view.number, view.restorable) == (compaction, 1, True)
        assert _chat_texts([Message(**_fields(m)) for m in view.messages])[0] == "Message 0"
        (restored,) = _of(events, CompactionRestoredEvent)
        assert restored.compaction == compaction
        assert restored.messages_restored == len(view.messages)

        # Every user message is live again, in the order it was sent; the checkpoint is gone.
        sent = [f"Message {i}" for i in range(len(_chat_texts(after)))]
        assert _chat_texts(after) == sent
        assert len(_chat_texts(after)) > len(_chat_texts(before))
        assert not any(m.kind in ("summary", "continuation") for m in after)
        saved = [e for e in _of(events, NoticeEvent) if e.kind == NOTICE_RESTORED]
        assert saved and saved[0].text.startswith("restored ")
        assert saved[0].details["compaction"] == compaction

        # Opened again: the restored history is what the model is sent, and the restore is
        # on record (the journal's copy of the undone checkpoint is not folded back in).
        again: list[Event] = []
        reopened: list[Message] = []

        async def reopen(s: ChatSession) -> None:
            reopened.extend(s.history())
            await s.send("/compaction")

        _drive(_session(fake, home, again, conversation_id=conversation_id), reopen)
    assert [m.id for m in model_messages(reopened)] == [m.id for m in model_messages(after)]
    (listed_again,) = _of(again, CompactionListEvent)
    assert listed_again.compactions[0]["restored"] is True
    assert listed_again.compactions[0]["live"] is False


def _fields(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("role", "kind", "content", "id")}


def test_a_restore_that_would_reach_the_auto_compact_mark_waits_for_a_confirmation(
    tmp_path: Path,
):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        held: dict[str, list[Message]] = {}

        async def script(s: ChatSession) -> None:
            await _until_compacted(s, events)
            await s.send("/compaction show 1")
            held["before"] = s.history()
            await s.send("/compaction restore 1")
            held["after"] = s.history()

        _drive(_session(fake, tmp_path / "home", events), script)
    (view,) = _of(events, CompactionViewEvent)
    assert view.window == 2048 and view.tokens >= view.compact_at > 0
    assert view.fits is False
    (waiting,) = [e for e in _of(events, NoticeEvent) if e.kind == NOTICE_RESTORE_UNCONFIRMED]
    assert waiting.details["tokens"] == view.tokens
    assert "`/compaction restore 1 anyway`" in waiting.text
    assert not _of(events, CompactionRestoredEvent)
    assert held["after"] == held["before"]  # nothing changed: the checkpoint is still live
    assert any(m.kind == "summary" for m in held["after"])


def test_a_small_restore_fits_and_is_done_at_once(tmp_path: Path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = _respond

        async def script(s: ChatSession) -> None:
            for i in range(12):
                await s.send(f"Message {i}: {WORDS}{WORDS}")
            await s.send("/compact")
            await s.send("/compaction show 1")
            await s.send("/compaction restore 1")

        _drive(_session(fake, tmp_path / "home", events), script)
    assert _compactions(events), [e.text for e in _of(events, NoticeEvent)]
    (view,) = _of(events, CompactionViewEvent)
    assert view.fits is True and 0 < view.tokens < view.compact_at
    (restored,) = _of(events, CompactionRestoredEvent)
    assert restored.fits is True


def test_after_a_restore_the_next_compaction_asks_the_guided_questions(tmp_path: Path):
    events: list[Event] = []
    home = tmp_path / "home"
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        marks: dict[str, int] = {}

        async def script(s: ChatSession) -> None:
            await _until_compacted(s, events)
            marks["restore"] = len(fake.chat_requests)
            await s.send("/compaction restore 1 anyway")
            await s.send(f"One more: {WORDS}")  # over the mark: the ladder compacts again

        session = _session(fake, home, events)
        _drive(session, script)
        bodies = [r.body for r in fake.chat_requests]
        before = [b for b in bodies[: marks["restore"]] if is_compaction(b)]
        after = [b for b in bodies[marks["restore"] :] if is_compaction(b)]
        assert before and not any(_is_guided(b) for b in before)  # free-form, accepted
        assert len(_compactions(events)) == 2
        assert after and all(_is_guided(b) for b in after)

        # Opened again, the conversation still compacts with the guided questions.
        again: list[Event] = []
        mark = len(fake.chat_requests)

        async def more(s: ChatSession) -> None:
            await _until_compacted(s, again)

        _drive(_session(fake, home, again, conversation_id=session.conversation_id), more)
        later = [r.body for r in fake.chat_requests[mark:] if is_compaction(r.body)]
    assert later and all(_is_guided(b) for b in later)


def test_a_compaction_that_is_not_there_or_not_live_is_refused_with_what_to_do(tmp_path: Path):
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond

        async def script(s: ChatSession) -> None:
            await s.send("/compaction show 1")
            await _until_compacted(s, events)
            await s.send("/compaction restore 7")
            await s.send("/compaction undo 1")
            await s.send("/compaction restore 1 anyway")
            await s.send("/compaction restore 1 anyway")

        _drive(_session(fake, tmp_path / "home", events), script)
    errors = [(e.kind, e.message) for e in _of(events, ErrorEvent)]
    assert errors[0] == (
        "unknown_compaction",
        "No compaction 1 in this conversation (it has none yet; `/compaction` lists them).",
    )
    assert errors[1][0] == "unknown_compaction" and "(it has 1;" in errors[1][1]
    assert errors[2][0] == "bad_command"
    assert errors[3] == ("not_restorable", "Compaction 1 was restored already.")
    assert len(_of(events, CompactionRestoredEvent)) == 1
