"""llama-server's default: four slots over one KV pool. When the requests in flight outgrow
it, every one of them fails ("Context size has been exceeded."): Brim waits and retries,
compacts only when its own request alone is too big, says why once per conversation, and
never lets its own requests be two of those in flight."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path

import httpx
import pytest

from engine.agent import shared_pool
from engine.agent.shared_pool import PoolContended, SharedPoolWatch
from engine.config import default_agent
from engine.events import (
    NOTICE_SHARED_POOL,
    CompactionEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
)
from engine.messages import assistant, user
from engine.paths import BrimPaths
from engine.providers.errors import ContextOverflow, KvPoolFull
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, Reply

OTHER = "another client's question"
ANSWER = " ".join(f"part{i}" for i in range(150))  # ~490 tokens, streamed slowly


def _agent(fake: FakeLlamaServer):  # type: ignore[no-untyped-def]
    return default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake"
    )


def _respond(request):  # type: ignore[no-untyped-def]
    last = str((request.body.get("messages") or [{}])[-1].get("content", ""))
    if OTHER in last:
        return Reply(text=" ".join(f"other{i}" for i in range(2000)))  # holds the pool long
    return Reply(text=ANSWER)


def _busy_client(fake: FakeLlamaServer) -> threading.Thread:
    """A second client whose one streaming request holds ~1,800 of the pool's 2,048 cells
    and grows; it gives up when the pool fails it (as a client would that has no retry)."""

    def go() -> None:
        body = {
            "messages": [{"role": "user", "content": OTHER + " " + "w " * 1780}],
            "stream": True,
        }
        url = f"{fake.url}/v1/chat/completions"
        with contextlib.suppress(httpx.HTTPError), httpx.stream("POST", url, json=body) as r:
            for _ in r.iter_lines():
                pass

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while fake.pool is not None and fake.pool.in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread


def _run(fake: FakeLlamaServer, home: Path, turns: int, busy: bool = True) -> list[Event]:
    events: list[Event] = []

    async def go() -> None:
        session = ChatSession(_agent(fake), BrimPaths.resolve(home), events.append)
        await session.start()
        for i in range(turns):
            if busy:
                await asyncio.to_thread(_busy_client, fake)
            await session.send(f"Question {i}: tell me about the weather.")
        await session.close()

    asyncio.run(go())
    return events


def _pool_notices(events: list[Event]) -> list[NoticeEvent]:
    return [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_SHARED_POOL]


def test_a_pool_that_runs_dry_mid_answer_is_retried_and_not_compacted(tmp_path: Path):
    with FakeLlamaServer(n_ctx=2048, token_delay=0.005) as fake:
        fake.responder = _respond
        events = _run(fake, tmp_path, turns=1)
        mine = [r for r in fake.chat_requests if OTHER not in str(r.body)]
        failed = [r for r in mine if r.pool_failed]
    assert len(failed) == 1 and len(mine) == 2  # cut once mid-answer, then answered whole
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert [e for e in events if isinstance(e, CompactionEvent)] == []
    ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert len(ends) == 1
    notices = _pool_notices(events)
    assert len(notices) == 1
    assert notices[0].details["pool"] == 2048 and notices[0].details["slots"] == 4


def test_the_shared_pool_is_explained_once_per_conversation(tmp_path: Path):
    with FakeLlamaServer(n_ctx=2048, token_delay=0.005) as fake:
        fake.responder = _respond
        events = _run(fake, tmp_path, turns=2)
        failed = [r for r in fake.chat_requests if r.pool_failed and OTHER not in str(r.body)]
    assert len(failed) == 2  # the pool ran dry under Brim in both turns ...
    assert len(_pool_notices(events)) == 1  # ... and the user heard why once
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 2


def test_brims_own_requests_to_one_server_never_overlap(tmp_path: Path):
    """Two open conversations on one server (the desktop holds several) answer at once:
    their requests go one after the other, so neither can starve the other's pool."""
    events: list[Event] = []

    async def go() -> None:
        paths = BrimPaths.resolve(tmp_path)
        first = ChatSession(_agent(fake), paths, events.append)
        second = ChatSession(_agent(fake), paths, events.append)
        await first.start()
        await second.start()
        await asyncio.gather(first.send("One?"), second.send("Two?"))
        await first.close()
        await second.close()

    with FakeLlamaServer(n_ctx=8192, token_delay=0.005) as fake:
        fake.responder = _respond
        asyncio.run(go())
        peak = fake.pool.peak_in_flight if fake.pool is not None else 0
        asked = len(fake.chat_requests)
    assert asked == 2
    assert peak == 1
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 2
    assert [e for e in events if isinstance(e, ErrorEvent)] == []


def _long_turn(i: int) -> str:
    """About 400 tokens on the bundled model's vocabulary (a token a digit): three of them
    take more than half of a 2,048 pool and do not fit beside a tenant, yet stay under the
    compaction trigger that leaves a compaction its room (about 72% of 2,048)."""
    return f"Note {i}: " + " ".join(f"host-{i}-{j} runs job-{j}" for j in range(38))


def test_a_pool_another_client_keeps_full_shrinks_the_request_and_the_turn_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A client that never lets the pool drain: waiting cannot help, so once the backoff is
    spent the conversation shrinks until its request takes at most half the pool, and the
    turn is answered instead of failing."""
    monkeypatch.setattr(shared_pool, "POOL_BACKOFF_S", (0.01, 0.01))
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = lambda request: Reply(text="Noted.")
        agent = _agent(fake).with_changes(max_tokens=64)

        async def go() -> None:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
            await session.start()
            for i in range(3):  # under the compaction trigger, over half the pool
                await session.send(_long_turn(i))
            assert fake.pool is not None
            fake.pool.steady_tenant = 900  # from now on another client holds 900 cells
            await session.send("What runs on host-2-5?")
            await session.close()

        asyncio.run(go())
        last = fake.chat_requests[-1]
        before = [r.prompt_tokens or 0 for r in fake.chat_requests[:-1] if not r.pool_failed]
    # the premise: the request before the other client came took more than half the pool,
    # uncompacted, and could not fit beside the other client's cells
    assert max(before) > 1024 and before[-1] > 2048 - 900
    assert not [e for e in events if isinstance(e, CompactionEvent) and e.reason != "shared_pool"]
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert len([e for e in events if isinstance(e, TurnEndEvent)]) == 4
    assert not last.pool_failed and (last.prompt_tokens or 0) + 64 <= 1024
    shrunk = [e for e in events if isinstance(e, CompactionEvent) and e.reason == "shared_pool"]
    assert shrunk, "the conversation never shrank for the pool"


# --- the rule, without a server ----------------------------------------------------------------


class _Conversation:
    def __init__(self) -> None:
        self.messages = [user("hi")]

    def live(self):  # type: ignore[no-untyped-def]
        return list(self.messages)

    def append(self, message) -> None:  # type: ignore[no-untyped-def]
        self.messages.append(message)

    def replace(self, history) -> None:  # type: ignore[no-untyped-def]
        self.messages = list(history)


def _watch(conversation: _Conversation, marks: list[str], slept: list[float]) -> SharedPoolWatch:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    def mark(kind: str, text: str, details: dict[str, int | str]) -> None:
        marks.append(kind)
        conversation.append(assistant(text).with_meta(notice_kind=kind))

    return SharedPoolWatch(mark=mark, conversation=conversation, backoff=(0.1, 0.2), sleep=sleep)


def _failing(times: int):  # type: ignore[no-untyped-def]
    calls = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= times:
            error = KvPoolFull("llama-server ran out of the KV cache", status=200)
            error.partial = assistant("half an ans").with_meta(partial=True)
            raise error
        return "answer"

    return attempt, calls


def test_a_request_that_alone_is_more_than_the_pool_is_compacted_not_retried():
    conversation, marks, slept = _Conversation(), [], []
    attempt, calls = _failing(1)
    with pytest.raises(ContextOverflow) as raised:
        asyncio.run(
            _watch(conversation, marks, slept).run(attempt, needed=3000, pool=2048, slots=4)
        )
    assert (raised.value.prompt_tokens, raised.value.window) == (3000, 2048)
    assert (len(calls), slept, marks) == (1, [], [])


def test_a_request_that_fits_the_pool_alone_waits_and_is_sent_again():
    conversation, marks, slept = _Conversation(), [], []
    attempt, calls = _failing(2)
    watch = _watch(conversation, marks, slept)
    assert asyncio.run(watch.run(attempt, needed=1200, pool=2048, slots=4)) == "answer"
    assert (len(calls), slept, marks) == (3, [0.1, 0.2], [NOTICE_SHARED_POOL])
    assert not [m for m in conversation.messages if m.meta_value("partial")]  # replaced


def test_a_request_above_half_the_pool_asks_to_shrink_once_the_backoff_is_spent():
    conversation, marks, slept = _Conversation(), [], []
    attempt, calls = _failing(10)
    with pytest.raises(PoolContended) as raised:
        asyncio.run(
            _watch(conversation, marks, slept).run(attempt, needed=1200, pool=2048, slots=4)
        )
    assert len(calls) == 3 and slept == [0.1, 0.2]
    assert (raised.value.share, raised.value.excess) == (1024, 176)
    # the request goes again after the shrink: what the pool cut is not kept as an answer
    assert not [m for m in conversation.messages if m.meta_value("partial")]


def test_a_pool_that_stays_full_fails_the_turn_clearly_and_keeps_what_was_answered():
    conversation, marks, slept = _Conversation(), [], []
    attempt, calls = _failing(10)
    with pytest.raises(KvPoolFull) as raised:
        asyncio.run(_watch(conversation, marks, slept).run(attempt, needed=900, pool=2048, slots=4))
    assert not isinstance(raised.value, PoolContended)  # within its share: nothing to shrink
    assert len(calls) == 3 and raised.value.retryable
    assert "press Retry" in raised.value.message and "--parallel 1" in raised.value.message
    assert [m.content for m in conversation.messages if m.meta_value("partial")] == ["half an ans"]
