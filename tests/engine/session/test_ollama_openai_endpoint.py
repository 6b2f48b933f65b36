"""An agent that reaches Ollama through an OpenAI-compatible provider (its `/v1`) gets no
num_ctx and no refusal of an over-long prompt: Brim tells it once, as a notice with data."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import Event, NoticeEvent
from engine.paths import BrimPaths
from engine.providers.base import NOTICE_OLLAMA_OPENAI_ENDPOINT
from engine.providers.registry import make_provider
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeVllm, OllamaModel

MODEL = "qwen3:8b"


def _start(agent: Any, home: Path, conversation: str = "") -> tuple[list[Event], str]:
    events: list[Event] = []
    opened = ""

    async def go() -> None:
        nonlocal opened
        chat = ChatSession(
            agent, BrimPaths.resolve(home), events.append, conversation_id=conversation or None
        )
        await chat.start()
        opened = chat.conversation_id
        await chat.close()

    asyncio.run(go())
    return events, opened


def _endpoint_notices(events: list[Event]) -> list[NoticeEvent]:
    return [
        e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_OLLAMA_OPENAI_ENDPOINT
    ]


@pytest.mark.parametrize("kind", ["vllm", "sglang", "llamacpp"])
def test_an_openai_compatible_agent_pointed_at_ollamas_v1_is_warned_once_with_data(
    tmp_path: Path, kind: str
):
    with FakeOllama([OllamaModel(MODEL)], version="0.33.0") as fake:
        agent = default_agent().with_changes(
            name="chat", provider=kind, base_url=f"{fake.url}/v1", model=MODEL
        )
        first, conversation = _start(agent, tmp_path)
        again, _ = _start(agent, tmp_path, conversation)

    (told,) = _endpoint_notices(first)
    assert told.level == "warning"
    assert told.details == {"engine": "ollama", "version": "0.33.0", "provider": kind}
    assert "num_ctx" in told.text and 'provider = "ollama"' in told.text
    assert _endpoint_notices(again) == []  # the reopened conversation has it already


@pytest.mark.parametrize(
    ("kind", "fake"), [("vllm", FakeVllm), ("llamacpp", FakeLlamaServer)], ids=["vllm", "llamacpp"]
)
def test_a_real_openai_compatible_engine_draws_no_such_notice(kind: str, fake: Any):
    async def go(url: str) -> list:
        provider = make_provider(kind, url)
        try:
            models = await provider.list_models()
            return (await provider.report(models[0].id)).notices
        finally:
            await provider.aclose()

    with fake() as server:
        assert asyncio.run(go(server.url)) == []
