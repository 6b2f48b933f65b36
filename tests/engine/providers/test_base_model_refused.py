"""Gemma 3 270M is bundled as the pretrained base model: in a chat it streamed Brim's system
prompt and the user's memory back as its answer. Brim neither offers it in the embedded
engine's model picker nor runs a chat on it: a chat agent that names it is refused at the
start with a message that says why and what to pick, and nothing is sent to the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.agent.probe import list_agent_models
from engine.config import AgentConfig
from engine.events import DeltaEvent, ErrorEvent, Event
from engine.paths import BrimPaths
from engine.providers import bundled_models
from engine.providers.base import ChatOptions
from engine.providers.bundled_models import GEMMA3_270M, SMOLLM2
from engine.providers.embedded import EmbeddedProvider, NotAChatModel
from engine.session import ChatSession


def test_the_embedded_model_picker_offers_the_chat_model_and_not_the_base_one(monkeypatch):
    # Both installed, whatever this machine has: the picker is decided by the model's kind.
    monkeypatch.setattr(bundled_models, "installed", lambda model: True)
    agent = AgentConfig(name="a", provider="embedded")
    models = asyncio.run(list_agent_models(agent))
    assert isinstance(models, list)
    assert [m.id for m in models] == [SMOLLM2.name]


def test_a_chat_on_the_base_gemma_is_refused_clearly_and_nothing_reaches_the_model(
    tmp_path: Path,
):
    events: list[Event] = []
    agent = AgentConfig(name="a", provider="embedded", model=GEMMA3_270M.name)
    session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append, memory=True)

    async def run() -> int | None:
        await session.start()
        await session.send("What is the capital of France?")
        provider = session._provider
        pid = provider.child_pid if isinstance(provider, EmbeddedProvider) else -1
        await session.close()
        return pid

    assert asyncio.run(run()) is None  # the model was never loaded
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and all(e.kind == "model_not_found" and not e.retryable for e in errors)
    assert "base model" in errors[0].message and SMOLLM2.name in errors[0].message
    assert not any(isinstance(e, DeltaEvent) for e in events)
    assert not any(m.role == "assistant" for m in session.history())


@pytest.mark.parametrize("model", [GEMMA3_270M.name, GEMMA3_270M.file_name, GEMMA3_270M.package])
def test_the_embedded_engine_streams_nothing_for_the_base_model_by_any_of_its_names(model):
    provider = EmbeddedProvider(model_path=model, n_ctx=1024)

    async def run() -> None:
        async for _ in provider.stream_chat(model, [], ChatOptions(max_tokens=4)):
            pass

    with pytest.raises(NotAChatModel, match="pretrained base model"):
        asyncio.run(run())
    assert provider.child_pid is None
