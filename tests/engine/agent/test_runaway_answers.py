"""An answer that would run away: capped by default on every engine, stopped when it loops,
marked when it is cut, and never paid for with the user's own earlier messages.

The doubles write as the engines do when nobody caps them: Ollama's `num_predict` defaults
to -1 (it writes on, shifting its window), llama-server writes until its slot is full, vLLM
and SGLang until `max_model_len`; the essay here is 60,000 words, longer than any window."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import AgentConfig, default_agent
from engine.events import (
    NOTICE_ANSWER_CUT,
    NOTICE_REPETITION,
    Event,
    NoticeEvent,
    TrimEvent,
    TurnEndEvent,
)
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers import fake_tokenizer, smollm2_vocab
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeServer,
    FakeSglang,
    FakeVllm,
    OllamaModel,
    Reply,
)

ESSAY = " ".join(f"essay{i}" for i in range(60_000))  # an engine that would write on and on
LOOP_LINE = "My name is Alex and I am very happy to meet you today.\n"
LOOPING = "Hello Alex!\n" + LOOP_LINE * 3000
WINDOW = 4096
OLLAMA_CHAT = ("chat", "--headless", "--provider", "ollama", "--base-url")


def _engine(kind: str) -> tuple[FakeServer, dict[str, Any]]:
    """A fake engine serving a 4,096-token window, and the agent settings that reach it."""
    if kind == "ollama":
        fake: FakeServer = FakeOllama([OllamaModel("llama3.1:8b")], default_num_ctx=WINDOW)
        return fake, {"provider": "ollama", "model": "llama3.1:8b", "num_ctx": WINDOW}
    if kind == "llamacpp":
        return FakeLlamaServer(n_ctx=WINDOW, slots=1), {"provider": "llamacpp"}
    if kind == "vllm":
        vllm = FakeVllm(max_model_len=WINDOW)
        return vllm, {"provider": "vllm", "model": vllm.model}
    sglang = FakeSglang(context_length=WINDOW)
    return sglang, {"provider": "sglang", "model": sglang.model}


def _chat(
    tmp_path: Path, fake: FakeServer, settings: dict[str, Any], lines: list[str]
) -> tuple[list[Event], list[Message]]:
    """Send `lines` in one conversation; every event, and the live conversation as saved."""
    agent: AgentConfig = default_agent().with_changes(name="chat", base_url=fake.url, **settings)
    events: list[Event] = []
    paths = BrimPaths.resolve(tmp_path / "home")

    async def go() -> str:
        session = ChatSession(agent, paths, events.append)
        await session.start()
        try:
            for line in lines:
                await session.send(line)
        finally:
            await session.close()
        return session.conversation_id

    conversation = asyncio.run(go())
    store = Store.open(paths.db_path)
    try:
        saved = store.messages(conversation)
    finally:
        store.close()
    return events, saved


def _sent_cap(kind: str, body: dict[str, Any]) -> Any:
    if kind == "ollama":
        return (body.get("options") or {}).get("num_predict")
    return body.get("max_tokens")


def _notices(events: list[Event], kind: str) -> list[NoticeEvent]:
    return [e for e in events if isinstance(e, NoticeEvent) and e.kind == kind]


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm", "sglang"])
def test_an_agent_without_max_tokens_is_cut_at_a_quarter_of_the_window_on_every_engine(
    tmp_path: Path, kind: str
):
    fake, settings = _engine(kind)
    fake.default_reply = Reply(text=ESSAY)
    with fake:
        events, saved = _chat(tmp_path, fake, settings, ["Write a very long essay about rivers."])
        bodies = [r.body for r in fake.chat_requests]  # type: ignore[attr-defined]
    assert [_sent_cap(kind, b) for b in bodies] == [1024]
    (cut,) = _notices(events, NOTICE_ANSWER_CUT)
    assert cut.text.startswith("Cut at 1,024 tokens")
    assert cut.details == {"max_tokens": 1024, "completion_tokens": 1024, "limit": "default"}
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.finish_reason == "length" and end.completion_tokens == 1024
    answer = next(m for m in saved if m.role == "assistant")
    # The answer is the essay's first 1,024 tokens in the served model's own vocabulary.
    vocab = smollm2_vocab if kind in ("ollama", "llamacpp") else fake_tokenizer
    assert answer.content == vocab.head_tokens(ESSAY, 1024) and answer.meta_value("cut_at") == 1024
    row = next(m for m in saved if m.is_notice and m.meta_value("notice_kind") == "answer_cut")
    assert row.content == cut.text and saved.index(row) == saved.index(answer) + 1


def test_an_agents_own_max_tokens_is_sent_and_named_as_the_agents_cap(tmp_path: Path):
    fake, settings = _engine("llamacpp")
    fake.default_reply = Reply(text=ESSAY)
    with fake:
        events, _ = _chat(tmp_path, fake, {**settings, "max_tokens": 300}, ["Write an essay."])
        sent = [r.body["max_tokens"] for r in fake.chat_requests]
    (cut,) = _notices(events, NOTICE_ANSWER_CUT)
    assert sent == [300] and cut.details["limit"] == "agent"
    assert cut.text.startswith("Cut at 300 tokens: the agent's output cap")


def test_the_cap_never_asks_for_more_than_the_window_has_left_after_the_prompt(tmp_path: Path):
    """vLLM rejects prompt + max_tokens > max_model_len; the others would push the prompt out."""
    fake, settings = _engine("vllm")
    fake.default_reply = Reply(text="Short answer.")
    # Two pastes: together they fit, leaving less than a quarter of the window.
    pastes = [f"Here are my notes, part {part}: " + "note " * 1560 for part in (1, 2)]
    with fake:
        events, _ = _chat(tmp_path, fake, settings, pastes)
        request = fake.chat_requests[-1]
    assert not [e for e in events if e.type == "error"], events
    assert request.prompt_tokens > WINDOW - 1024
    assert request.prompt_tokens + request.body["max_tokens"] <= WINDOW
    assert request.body["max_tokens"] < 1024


def test_an_answer_that_loops_is_stopped_with_a_repetition_notice_and_saved_once(tmp_path: Path):
    fake, settings = _engine("llamacpp")
    fake.default_reply = Reply(text=LOOPING, token_delay=0.001)
    with fake:
        events, saved = _chat(tmp_path, fake, {**settings, "max_tokens": 3000}, ["my name is Alex"])
        abandoned = fake.wait_for_disconnect(5)
    (stop,) = _notices(events, NOTICE_REPETITION)
    assert stop.level == "warning"
    assert stop.details["block_chars"] == len(LOOP_LINE)
    assert stop.details["repeats"] >= 4 and stop.details["dropped_chars"] > 0
    streamed = "".join(e.text for e in events if e.type == "delta")
    assert streamed.count(LOOP_LINE) < 100, "the loop ran on to the cap"
    assert abandoned, "the engine was left generating the loop"
    answer = next(m for m in saved if m.role == "assistant")
    assert answer.content == "Hello Alex!\n" + LOOP_LINE
    assert answer.meta_value("stopped") == "repetition"
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.finish_reason == "repetition"
    assert end.completion_tokens >= len(streamed.split()) // 2  # the loop it cost is counted


def test_a_long_answer_never_trims_the_users_earlier_messages_to_make_room(tmp_path: Path):
    """The bug as a user met it: "my name is Alex", then an essay that filled the window,
    and the first exchange was trimmed away to make room for the essay."""
    fake, settings = _engine("llamacpp")
    fake.script(Reply(text="Nice to meet you, Alex."), Reply(text=ESSAY))
    with fake:
        events, saved = _chat(
            tmp_path,
            fake,
            {**settings, "max_tokens": 4000},  # a cap past the window: the essay fills it
            ["My name is Alex.", "Write a very long essay about rivers."],
        )
        requests = fake.chat_requests
    assert not [e for e in events if isinstance(e, TrimEvent)]
    assert any(m.role == "user" and m.content == "My name is Alex." for m in saved)
    for request in requests:
        assert request.prompt_tokens + request.body["max_tokens"] <= WINDOW
    (cut,) = _notices(events, NOTICE_ANSWER_CUT)
    assert cut.details["limit"] == "room" and "room" in cut.text


def test_headless_events_mark_a_cut_answer_with_its_kind_and_figures(tmp_path: Path):
    fake, _ = _engine("ollama")
    fake.default_reply = Reply(text=ESSAY)
    with fake:
        run = run_brim(
            [*OLLAMA_CHAT, fake.url, "--model", "llama3.1:8b", "--num-ctx", str(WINDOW)],
            data_dir=tmp_path,
            stdin="Write a very long essay about rivers.\nThanks, now a short one.\n",
        )
    assert run.returncode == 0, run.stderr
    cuts = [e for e in run.of_type("notice") if e["kind"] == "answer_cut"]
    assert [c["details"]["completion_tokens"] for c in cuts] == [1024, 1024]
    assert all(c["text"].startswith("Cut at 1,024 tokens") for c in cuts)
    assert [e["finish_reason"] for e in run.of_type("turn_end")] == ["length", "length"]


def test_headless_continue_after_a_cut_answer_sends_the_cut_answer_back_and_gets_the_rest(
    tmp_path: Path,
):
    fake, _ = _engine("ollama")
    rest = "And so the river reaches the sea."

    def respond(request: Any) -> Reply:
        last = request.body["messages"][-1]
        return Reply(text=rest) if last.get("content") == "continue" else Reply(text=ESSAY)

    fake.responder = respond
    with fake:
        run = run_brim(
            [*OLLAMA_CHAT, fake.url, "--model", "llama3.1:8b", "--num-ctx", str(WINDOW)],
            data_dir=tmp_path,
            stdin="Write a very long essay about rivers.\ncontinue\n",
        )
        second = fake.chat_requests[-1].body["messages"]
    assert run.returncode == 0, run.stderr
    assert [e["finish_reason"] for e in run.of_type("turn_end")] == ["length", "stop"]
    assert second[-1]["content"] == "continue"
    cut = next(m for m in second if m["role"] == "assistant")
    assert cut["content"].startswith("essay0 essay1")  # the cut answer went back with it
    assert rest in "".join(e["text"] for e in run.of_type("delta"))
