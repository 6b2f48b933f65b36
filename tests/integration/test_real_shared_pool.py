"""A real llama-server in its default mode while another client keeps it busy.

Started without `-np`, llama-server runs four slots over one unified KV pool of the whole
`-c`, and fails every request in flight with "Context size has been exceeded." when they
together outgrow it (tools/server/server-context.cpp). Brim talks to such a server for a
whole conversation while a second client sends its own requests back to back: every turn is
answered, every such failure Brim's requests met is recovered, and the user is told once.

A recording proxy sits between Brim and the server, so the failures counted are the
server's own words to Brim's requests, not Brim's reading of them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import httpx
import pytest

from bench._llama_server import running_llama_server
from engine.config import AgentConfig
from engine.events import NOTICE_SHARED_POOL, ErrorEvent, Event, NoticeEvent, UsageEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store
from tests.helpers.recording_proxy import RecordingProxy

# 15 minutes on two quiet cores (913 s measured): past what the suite may add, so it runs
# where asked, `BRIM_SHARED_POOL_TEST=1 pytest tests/integration/test_real_shared_pool.py`.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(
        os.environ.get("BRIM_SHARED_POOL_TEST") != "1",
        reason="a 15-minute real-server run: set BRIM_SHARED_POOL_TEST=1",
    ),
]

POOL = 2048
EXCEEDED = "Context size has been exceeded"

# The other client's request: about 700 prompt tokens and up to 160 answer tokens, so that
# with Brim's growing history the two outgrow the pool together while each alone fits.
OTHER_PROMPT = (
    "Here is a maintenance log. "
    + " ".join(
        f"Entry {i}: the pump at station {i} was checked, its filter replaced and its "
        "pressure noted."
        for i in range(30)
    )
    + " Summarise the log in one long paragraph."
)


class BusyClient:
    """Another user of the same server: one request at a time, back to back, until stopped;
    the server's refusals are counted and ignored, as a client that just tries again would."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sent = 0
        self.refused = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BusyClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def _run(self) -> None:
        body = {
            "messages": [{"role": "user", "content": OTHER_PROMPT}],
            "max_tokens": 160,
            "temperature": 0.8,
            "cache_prompt": False,
        }
        with httpx.Client(timeout=120) as client:
            while not self._stop.is_set():
                self.sent += 1
                try:
                    reply = client.post(f"{self.url}/v1/chat/completions", json=body)
                except httpx.HTTPError:
                    self.refused += 1
                    continue
                if reply.status_code != 200:
                    self.refused += 1


def _turns() -> list[str]:
    return [
        f"Note {i}: the build host build-{i} runs the job beta-{i} every {i + 2} minutes and "
        f"keeps its log in /srv/logs/beta-{i}.log; the owner is team-{i % 3}. "
        * 3
        + "Acknowledge in one sentence."
        for i in range(20)
    ]


def _replies_exceeded(proxy: RecordingProxy) -> int:
    return sum(EXCEEDED in reply for reply in proxy.refusals)


def test_a_conversation_beside_a_busy_client_on_the_default_shared_pool_loses_no_turn(
    tmp_path: Path,
):
    events: list[Event] = []
    turns = _turns()
    with running_llama_server(tmp_path, ctx=POOL, parallel=None) as server:
        with RecordingProxy(server.url) as proxy, BusyClient(server.url) as other:

            async def run() -> str:
                agent = AgentConfig(
                    name="beside-another", provider="llamacpp", base_url=proxy.url, model=""
                ).with_changes(max_tokens=48)
                session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
                await session.start()
                for text in turns:
                    await session.send(text)
                await session.close()
                return session.conversation_id

            conversation = asyncio.run(run())
            other_sent, other_refused = other.sent, other.refused
        server_log = server.log_path.read_text(errors="replace")

    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors == [], [e.message for e in errors]
    # Every turn was answered: one usage figure per turn at least, each within the pool.
    answered = [e for e in events if isinstance(e, UsageEvent)]
    assert len(answered) >= len(turns)
    assert all(e.prompt_tokens is not None and e.prompt_tokens < POOL for e in answered)
    # The pool did run dry under Brim's own requests, and each time Brim recovered.
    exceeded = _replies_exceeded(proxy)
    assert exceeded >= 1, (
        f"the other client sent {other_sent} requests ({other_refused} refused) and Brim's "
        "requests never met a full pool; the test did not test anything"
    )
    assert EXCEEDED in server_log
    # The user heard once why a turn waited.
    told = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_SHARED_POOL]
    assert len(told) == 1
    assert "one pool of 2,048 tokens" in told[0].text
    with Store.open(BrimPaths.resolve(tmp_path).db_path) as store:
        everything = store.messages(conversation, include_archived=True)
    said = [m.content for m in everything if m.role == "user"]
    assert all(text in said for text in turns)
    replies = [m for m in everything if m.role == "assistant" and not m.meta_value("partial")]
    assert len(replies) >= len(turns)
