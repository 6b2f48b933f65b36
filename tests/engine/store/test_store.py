"""Conversations and messages survive exactly as they were said, in order, and nothing a
compaction replaces is lost."""

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.messages import Message, ToolCall, assistant, notice, system, tool_result, user
from engine.store import (
    DuplicateMessage,
    Store,
    StoreError,
    UnknownConversation,
)


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "brim.sqlite3")
    yield s
    s.close()


def a_tool_exchange() -> list[Message]:
    call = ToolCall("call_1", "read_file", '{"path": "README.md"}')
    return [
        system("You are Brim."),
        user("What does the README say?"),
        assistant("", (call,)),
        tool_result(call, "# Brim\nA desktop agent.").with_meta(cleared=False, chars=24),
        assistant("It describes Brim, a desktop agent."),
        notice("Context window ~83% full", "warning"),
    ]


def test_a_conversation_round_trips_every_message_field(store):
    conversation = store.create_conversation("coder", workspace="/src/app")
    history = a_tool_exchange()
    for message in history:
        store.append_message(conversation, message)
    assert store.messages(conversation) == history


def test_messages_come_back_in_the_order_they_were_appended_not_by_time(store):
    conversation = store.create_conversation("coder")
    later_first = [user("second", created=200.0), user("first", created=100.0)]
    for message in later_first:
        store.append_message(conversation, message)
    assert [m.content for m in store.messages(conversation)] == ["second", "first"]


def test_an_appended_message_is_durable_before_the_call_returns(tmp_path, store):
    conversation = store.create_conversation("coder")
    store.append_message(conversation, user("do not lose me"))
    # another connection (as another process would) sees it without any close or flush
    other = sqlite3.connect(tmp_path / "brim.sqlite3")
    try:
        rows = other.execute("SELECT content FROM messages").fetchall()
    finally:
        other.close()
    assert rows == [("do not lose me",)]


def test_the_database_runs_in_wal_mode_with_foreign_keys(tmp_path, store):
    conn = sqlite3.connect(tmp_path / "brim.sqlite3")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    with store._read() as own:
        assert own.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert own.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_the_listing_shows_title_agent_updated_and_message_count(store):
    first = store.create_conversation("coder")
    store.append_message(first, system("sys"))
    store.append_message(first, user("  \nFix the failing test in parser.py\nthanks"))
    second = store.create_conversation("writer", title="Draft")
    listing = store.list_conversations()
    assert [c.id for c in listing] == [second, first]  # newest first
    assert listing[1].title == "Fix the failing test in parser.py"
    assert (listing[1].agent, listing[1].message_count) == ("coder", 2)
    assert [c.id for c in store.list_conversations("coder")] == [first]


def test_appending_moves_a_conversation_to_the_top(store):
    old = store.create_conversation("coder")
    new = store.create_conversation("coder")
    store.append_message(old, user("back to this one"))
    assert [c.id for c in store.list_conversations()] == [old, new]


def test_a_long_first_message_makes_a_short_title_and_a_rename_wins(store):
    conversation = store.create_conversation("coder")
    store.append_message(conversation, user("word " * 50))
    title = store.get_conversation(conversation).title
    assert len(title) <= 60 and title.endswith("…")
    store.rename_conversation(conversation, "Parser work")
    store.append_message(conversation, user("another"))
    assert store.get_conversation(conversation).title == "Parser work"


def test_a_deleted_conversation_is_hidden_and_can_be_restored_whole(store):
    conversation = store.create_conversation("coder")
    store.append_message(conversation, user("keep me"))
    store.delete_conversation(conversation)
    assert store.list_conversations() == []
    assert store.get_conversation(conversation) is None
    assert store.get_conversation(conversation, include_deleted=True).deleted is not None
    with pytest.raises(UnknownConversation):
        store.append_message(conversation, user("too late"))
    store.restore_conversation(conversation)
    assert [m.content for m in store.messages(conversation)] == ["keep me"]
    assert store.get_conversation(conversation).deleted is None


def test_purging_removes_old_deleted_conversations_but_keeps_usage_totals(store):
    conversation = store.create_conversation("coder")
    store.append_message(conversation, user("bye"))
    store.record_usage(
        conversation,
        agent="coder",
        provider="ollama",
        model="qwen",
        prompt_tokens=10,
        completion_tokens=2,
        cached_tokens=None,
    )
    store.delete_conversation(conversation)
    assert store.purge_deleted(older_than_s=3600) == 0
    assert store.purge_deleted(older_than_s=0) == 1
    assert store.get_conversation(conversation, include_deleted=True) is None
    assert store.messages(conversation) == []
    assert store.usage_summary()[0].prompt_tokens == 10


def test_unknown_conversations_are_reported_by_id(store):
    with pytest.raises(UnknownConversation, match="'nope'"):
        store.append_message("nope", user("x"))
    with pytest.raises(UnknownConversation):
        store.rename_conversation("nope", "t")
    with pytest.raises(UnknownConversation):
        store.restore_conversation("nope")
    assert store.get_conversation("nope") is None


def test_replacing_the_history_archives_the_old_one_instead_of_deleting_it(store):
    conversation = store.create_conversation("coder")
    original = a_tool_exchange()
    for message in original:
        store.append_message(conversation, message)
    summary = Message(role="user", content="[summary] read the README", kind="summary")
    compacted = [original[0], summary, original[-2]]
    store.replace_messages(conversation, compacted)
    assert store.messages(conversation) == compacted
    assert store.get_conversation(conversation).message_count == 3
    # the full record: everything originally said, then what the rewrite introduced
    assert store.messages(conversation, include_archived=True) == [*original, summary]
    records = store.records(conversation)
    assert [r.archived for r in records] == [True] * 6 + [False] * 3
    store.append_message(conversation, user("next"))
    assert [m.content for m in store.messages(conversation)][-1] == "next"


def test_a_message_rewritten_in_place_keeps_its_original_in_the_full_record(store):
    conversation = store.create_conversation("coder")
    call = ToolCall("c1", "read_file", "{}")
    result = tool_result(call, "x" * 10_000)
    for message in (user("read it"), assistant("", (call,)), result):
        store.append_message(conversation, message)
    cleared = result.with_meta(cleared=True)
    from dataclasses import replace

    cleared = replace(cleared, content="[cleared: use retrieve_tool_result]")
    store.replace_messages(conversation, [*store.messages(conversation)[:2], cleared])
    assert store.messages(conversation)[-1].content.startswith("[cleared")
    assert store.messages(conversation, include_archived=True)[-1].content == "x" * 10_000


def test_a_failed_replacement_leaves_the_history_untouched(store):
    conversation = store.create_conversation("coder")
    history = [user("a"), assistant("b")]
    for message in history:
        store.append_message(conversation, message)
    twice = user("dup")
    with pytest.raises(DuplicateMessage):
        store.replace_messages(conversation, [twice, twice])
    assert store.messages(conversation) == history
    assert all(not r.archived for r in store.records(conversation))


def test_appending_the_same_message_twice_is_refused(store):
    conversation = store.create_conversation("coder")
    message = user("once")
    store.append_message(conversation, message)
    with pytest.raises(DuplicateMessage):
        store.append_message(conversation, message)
    assert len(store.messages(conversation)) == 1


def test_meta_that_is_not_json_is_refused_before_anything_is_written(store):
    conversation = store.create_conversation("coder")
    with pytest.raises(StoreError, match="meta values must be JSON"):
        store.append_message(conversation, user("x").with_meta(when=object()))
    assert store.messages(conversation) == []


def test_usage_sums_per_provider_and_model_with_unreported_cache_kept_unknown(store):
    a = store.create_conversation("coder")
    b = store.create_conversation("coder")
    rows = [
        (a, "ollama", "qwen", 100, 10, None),
        (a, "ollama", "qwen", 150, 12, None),
        (a, "llamacpp", "smol", 200, 20, 180),
        (b, "llamacpp", "smol", 300, 30, 0),
    ]
    for conv, provider, model, prompt, completion, cached in rows:
        store.record_usage(
            conv,
            agent="coder",
            provider=provider,
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
        )
    per_a = {(u.provider, u.model): u for u in store.usage_summary(a)}
    assert per_a["ollama", "qwen"].requests == 2
    assert per_a["ollama", "qwen"].prompt_tokens == 250
    assert per_a["ollama", "qwen"].cached_tokens is None  # never reported: not zero
    assert per_a["llamacpp", "smol"].cached_tokens == 180
    total = {(u.provider, u.model): u for u in store.usage_summary()}
    assert total["llamacpp", "smol"].cached_tokens == 180
    assert total["llamacpp", "smol"].completion_tokens == 50


def test_receipts_are_kept_per_turn(store):
    conversation = store.create_conversation("coder")
    store.record_receipt(
        conversation, elapsed_s=2.5, prompt_tokens=900, completion_tokens=50, tokens_per_s=20.0
    )
    store.record_receipt(
        conversation, elapsed_s=1.0, prompt_tokens=950, completion_tokens=10, tokens_per_s=10.0
    )
    receipts = store.receipts(conversation)
    assert [(r.prompt_tokens, r.tokens_per_s) for r in receipts] == [(900, 20.0), (950, 10.0)]
    with pytest.raises(UnknownConversation):
        store.record_receipt(
            "nope", elapsed_s=1, prompt_tokens=1, completion_tokens=1, tokens_per_s=1
        )


def test_a_closed_store_says_so(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_conversations()


json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool", "notice"]),
    content=st.text(max_size=200),  # includes NUL, lone surrogates, emoji
    tool_calls=st.lists(
        st.builds(ToolCall, st.text(max_size=10), st.text(max_size=10), st.text(max_size=40)),
        max_size=3,
    ).map(tuple),
    tool_call_id=st.none() | st.text(max_size=10),
    name=st.none() | st.text(max_size=10),
    kind=st.sampled_from(["chat", "pinned", "task", "summary", "continuation", "notice"]),
    created=st.floats(0, 4e9),
    meta=st.dictionaries(st.text(max_size=8), json_values, max_size=4).map(
        lambda d: tuple(sorted(d.items()))
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, max_size=12, unique_by=lambda m: m.id))
def test_any_message_round_trips_exactly(history):
    with tempfile.TemporaryDirectory() as folder, Store.open(Path(folder) / "db") as store:
        conversation = store.create_conversation("fuzz")
        for message in history:
            store.append_message(conversation, message)
        assert store.messages(conversation) == history
        store.replace_messages(conversation, list(reversed(history)))
        assert store.messages(conversation) == list(reversed(history))
