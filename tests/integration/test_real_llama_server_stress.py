"""A real llama-server under stress: a long run with compactions, its own cache figures,
a server killed mid-stream, and two conversations at once on two slots.

The server is the foundation's (`-c 4096 -np 2`: two slots of 2048 tokens) with the default
model. A recording proxy sits between Brim and the server where a test compares Brim's
numbers with the server's own words.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bench._llama_server import RealLlamaServer, free_port, start_llama_server
from engine.config import AgentConfig
from engine.events import (
    CompactionEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    UsageEvent,
)
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.recording_proxy import RecordingProxy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SLOT_WINDOW = 2048


def _agent(url: str, **changes: object) -> AgentConfig:
    return AgentConfig(name="stress", provider="llamacpp", base_url=url, model="").with_changes(
        **changes
    )


def _of(events: list[Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


async def _session(agent: AgentConfig, root: Path, events: list[Event]) -> ChatSession:
    session = ChatSession(agent, BrimPaths.resolve(root), events.append)
    await session.start()
    return session


def test_a_long_run_compacts_on_the_real_server_and_no_request_overflows(
    llama_server: RealLlamaServer, tmp_path: Path
):
    events: list[Event] = []
    turns = [
        f"Note {i}: host build-{i} runs job beta-{i} every {i + 2} minutes and keeps its "
        f"log in /srv/logs/beta-{i}.log. " * 4 + "Acknowledge briefly."
        for i in range(14)
    ]
    log_before = llama_server.log_path.read_text(errors="replace")

    async def run() -> str:
        session = await _session(_agent(llama_server.url, max_tokens=40), tmp_path, events)
        for text in turns:
            await session.send(text)
        await session.close()
        return session.conversation_id

    conversation = asyncio.run(run())

    assert _of(events, ErrorEvent) == []
    prompts = [e.prompt_tokens for e in _of(events, UsageEvent)]
    assert len(prompts) == len(turns)
    assert all(p is not None and p < SLOT_WINDOW for p in prompts)
    finished = [e for e in _of(events, CompactionEvent) if e.phase == "finished"]
    assert finished, "no compaction was accepted on a 2048-token slot"
    # The server itself never refused a prompt for its size.
    log = llama_server.log_path.read_text(errors="replace")[len(log_before) :]
    assert "exceed" not in log.lower()
    with Store.open(BrimPaths.resolve(tmp_path).db_path) as store:
        everything = store.messages(conversation, include_archived=True)
    said = {m.content for m in everything if m.role == "user"}
    assert all(text in said for text in turns)


def test_the_prompt_cache_lines_show_the_servers_own_cache_n(
    llama_server: RealLlamaServer, tmp_path: Path
):
    events: list[Event] = []
    with RecordingProxy(llama_server.url) as proxy:

        async def run() -> list[str]:
            session = await _session(_agent(proxy.url, max_tokens=12), tmp_path, events)
            lines: list[str] = []
            for text in ("Name a fruit.", "Name a vegetable.", "Name a tree."):
                await session.send(text)
                lines.append(session.context_report().cache_lines()[-1])
            await session.close()
            return lines

        lines = asyncio.run(run())

    answered = [c for c in proxy.chats if c.timings]
    cache_n = [c.last_timings["cache_n"] for c in answered]
    cached = [e.cached_tokens for e in _of(events, UsageEvent)]
    assert cached == cache_n  # every request's figure is the server's, unchanged
    assert cache_n[-1] > 0  # the follow-ups reuse the conversation's prefix
    for line, n in zip(lines, cache_n, strict=True):
        assert line.startswith("Prompt cache (last request): ")
        assert f"{n} read" in line or (n >= 1000 and "K read" in line)


def test_a_server_killed_mid_stream_gives_a_clear_error_and_the_retry_works_once_it_is_back(
    tmp_path: Path,
):
    port = free_port()
    server = start_llama_server(tmp_path, ctx=2048, parallel=1, port=port)
    events: list[Event] = []
    restarted: list[RealLlamaServer] = []
    killed_at: list[int] = []

    def sink(event: Event) -> None:
        events.append(event)
        if isinstance(event, DeltaEvent) and not killed_at:
            killed_at.append(len(events))
            server.kill()

    async def run() -> tuple[list[Event], list[Event]]:
        session = ChatSession(
            _agent(server.url, max_tokens=300), BrimPaths.resolve(tmp_path / "home"), sink
        )
        await session.start()
        await session.send("Write a long story about a lighthouse keeper and a storm.")
        first = list(events)
        restarted.append(start_llama_server(tmp_path, ctx=2048, parallel=1, port=port))
        await session.retry()
        second = events[len(first) :]
        history = session.history()
        await session.close()
        assert any(m.role == "user" and "lighthouse" in m.content for m in history)
        return first, second

    try:
        first, second = asyncio.run(run())
    finally:
        server.kill()
        for s in restarted:
            s.stop()

    assert killed_at, "the stream never started"
    errors = _of(first, ErrorEvent)
    assert len(errors) == 1
    assert "llama-server" in errors[0].message and "127.0.0.1" in errors[0].message
    assert errors[0].kind in {"server_error", "unreachable"}
    assert _of(second, ErrorEvent) == []
    assert "".join(e.text for e in _of(second, DeltaEvent)).strip()
    assert [e for e in _of(second, UsageEvent) if e.prompt_tokens]


def test_two_conversations_at_once_on_two_slots_each_keep_their_own_slot(
    llama_server: RealLlamaServer, tmp_path: Path
):
    with RecordingProxy(llama_server.url) as proxy:
        events = {"a": [], "b": []}

        async def run() -> None:
            a = await _session(_agent(proxy.url, max_tokens=60), tmp_path / "a", events["a"])
            b = await _session(_agent(proxy.url, max_tokens=60), tmp_path / "b", events["b"])
            await asyncio.gather(
                a.send("Describe a harbour at dawn in a few sentences. " * 6),
                b.send("Explain how a bicycle gear works in a few sentences. " * 6),
            )
            await asyncio.gather(a.send("Now shorter."), b.send("Now shorter."))
            await asyncio.gather(a.close(), b.close())

        started = time.monotonic()
        asyncio.run(run())

    for name in ("a", "b"):
        assert _of(events[name], ErrorEvent) == [], name
        usages = _of(events[name], UsageEvent)
        assert len(usages) == 2
        assert all(u.prompt_tokens is not None and u.prompt_tokens < SLOT_WINDOW for u in usages)
        # The second turn found its own first turn still in a slot: nobody evicted it.
        assert usages[1].cached_tokens is not None
        assert usages[1].cached_tokens >= usages[0].prompt_tokens // 2, name
    chats = [c for c in proxy.chats if c.started >= started and c.ended is not None]
    first_pair = sorted(chats, key=lambda c: c.started)[:2]
    # The two first turns were served at the same time, not one after the other.
    assert first_pair[1].started < first_pair[0].ended
