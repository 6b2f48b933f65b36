"""A thinking model's reasoning kept with its message in the store (issue 49): written in
its own column, read back apart from the content, and a store from before it opens with
every message intact and no reasoning."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.messages import assistant, user
from engine.store import MIGRATIONS, Store


def test_the_reasoning_round_trips_apart_from_the_content(tmp_path: Path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path) as store:
        conversation = store.create_conversation("chat")
        store.append_message(conversation, user("What is two and two?"))
        store.append_message(conversation, assistant("Four.", reasoning="Two plus two is four."))
    with Store.open(path) as store:
        messages = store.messages(conversation)
    assert messages[1].content == "Four."
    assert messages[1].reasoning == "Two plus two is four."
    assert messages[0].reasoning == ""
    assert messages[1].to_dict()["reasoning"] == "Two plus two is four."
    assert "reasoning" not in messages[0].to_dict()
    conn = sqlite3.connect(path)
    contents = [row[0] for row in conn.execute("SELECT content FROM messages ORDER BY seq")]
    conn.close()
    assert all("plus" not in c for c in contents)


def test_a_store_from_before_the_reasoning_opens_with_its_messages(tmp_path: Path):
    path = tmp_path / "brim.sqlite3"
    with Store.open(path, migrations=MIGRATIONS[:4]) as store:
        conversation = store.create_conversation("chat")
        store.append_message(conversation, user("Hello"))
        store.append_message(conversation, assistant("Hi."))
    with Store.open(path) as store:
        messages = store.messages(conversation)
        store.append_message(conversation, assistant("More.", reasoning="thought"))
        again = store.messages(conversation)
    assert [(m.content, m.reasoning) for m in messages] == [("Hello", ""), ("Hi.", "")]
    assert again[-1].reasoning == "thought"
