"""The `Conversation` as an object: its messages and their persistence (a real store, no
engine and no session)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.context import Journal
from engine.context.work_state import PREAMBLE_HEAD
from engine.conversation_claim import ConversationBusy
from engine.messages import assistant, notice, system, user
from engine.paths import BrimPaths
from engine.session import Conversation, UnknownConversation
from engine.store import UnknownConversation as StoreUnknownConversation


def _opened(home: BrimPaths, **kw) -> Conversation:  # type: ignore[no-untyped-def]
    conversation = Conversation(home, "chat", **kw)
    conversation.open_store()
    return conversation


def test_an_appended_message_is_stored_before_it_is_live(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    first = _opened(home)
    first.create(None)
    first.append(system("You help."))
    first.append(user("Hello"))
    assert [m.content for m in first.live()] == ["You help.", "Hello"]
    conversation_id = first.id
    first.close()

    again = _opened(home)
    assert again.check_saved(conversation_id) == conversation_id
    again.load(conversation_id)
    assert [m.content for m in again.live()] == ["You help.", "Hello"]
    again.close()


def test_a_replaced_history_archives_the_old_rows_and_tells_its_listener(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    told: list[int] = []
    conversation = _opened(home, on_replaced=lambda: told.append(len(conversation.live())))
    conversation.create(None)
    for text in ("You help.", "one", "two"):
        conversation.append(user(text))
    conversation.replace([user("You help."), assistant("summary")])
    assert [m.content for m in conversation.live()] == ["You help.", "summary"]
    assert told == [2]
    # The full record keeps what the rewrite replaced.
    record = [m.content for m in conversation.transcript()]
    assert {"one", "two", "summary"} <= set(record)
    conversation.close()


def test_an_unknown_conversation_is_the_stores_error_and_changes_nothing(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    conversation = _opened(home)
    conversation.create(None)
    conversation.append(user("kept"))
    before = conversation.id
    with pytest.raises(UnknownConversation) as raised:
        conversation.check_saved("nope")
    assert UnknownConversation is StoreUnknownConversation  # one class, re-exported
    assert raised.value.conversation_id == "nope"
    assert conversation.id == before
    assert [m.content for m in conversation.live()] == ["kept"]
    conversation.close()


def test_a_conversation_another_holds_is_refused_until_it_lets_go(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    holder = _opened(home)
    holder.create(None)
    other = _opened(home)
    with pytest.raises(ConversationBusy):
        other.check_saved(holder.id)
    conversation_id = holder.id
    holder.close()
    assert other.check_saved(conversation_id) == conversation_id
    other.close()


def test_the_journal_is_folded_in_once_as_a_continuation(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    conversation = _opened(home)
    conversation.create(None)
    conversation.append(system("You help."))
    Journal(conversation.work_folder() / "journal.jsonl").append({"summary": "## Goal\nShip."})

    async def budget() -> int:
        return 2_000

    asyncio.run(conversation.fold_in_journal(budget, None))  # a new one: nothing to fold
    assert not [m for m in conversation.live() if m.content.startswith(PREAMBLE_HEAD)]
    for _ in range(2):  # opened again with no compaction since: no second copy
        conversation.load(conversation.id)
        asyncio.run(conversation.fold_in_journal(budget, None))
    folded = [m for m in conversation.live() if m.content.startswith(PREAMBLE_HEAD)]
    assert len(folded) == 1 and folded[0].kind == "continuation"
    assert "Ship." in folded[0].content
    conversation.close()


def test_without_a_store_the_messages_live_in_memory_only(tmp_path: Path):
    conversation = Conversation(BrimPaths.resolve(tmp_path / "home"), "chat")
    conversation.append(notice("said", "warning"))
    assert conversation.has_notice("said") and not conversation.has_notice("other")
    assert conversation.transcript() == conversation.live()
    assert conversation.turn_receipts() == []
