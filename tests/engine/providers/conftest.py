"""Fixtures for the provider tests: each engine's fake on loopback and a provider aimed at it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from engine.messages import Message, system, user
from engine.providers.base import (
    ChatOptions,
    Provider,
    StreamDone,
    StreamItem,
    TextDelta,
    ToolCallsReady,
)
from engine.providers.registry import make_provider
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeServer,
    FakeSglang,
    FakeVllm,
)

KINDS = ("ollama", "llamacpp", "vllm", "sglang")
FAKES: dict[str, Callable[..., FakeServer]] = {
    "ollama": FakeOllama,
    "llamacpp": FakeLlamaServer,
    "vllm": FakeVllm,
    "sglang": FakeSglang,
}
MODELS = {
    "ollama": "llama3.1:8b",
    "llamacpp": "SmolLM2-135M-Instruct-Q4_1",
    "vllm": "Qwen/Qwen2.5-7B-Instruct",
    "sglang": "meta-llama/Llama-3.1-8B-Instruct",
}


@dataclass
class Engine:
    kind: str
    fake: Any  # the running fake (FakeOllama, FakeLlamaServer, ...)
    model: str

    def provider(self, **kw: Any) -> Provider:
        kw.setdefault("timeout", 10.0)
        return make_provider(self.kind, self.fake.url, **kw)


@dataclass
class Answer:
    text: str
    items: list[StreamItem]

    @property
    def done(self) -> StreamDone:
        last = self.items[-1]
        assert isinstance(last, StreamDone)
        return last

    @property
    def tool_calls(self) -> tuple[Any, ...]:
        ready = [i for i in self.items if isinstance(i, ToolCallsReady)]
        return ready[0].calls if ready else ()


async def chat(
    provider: Provider,
    model: str,
    messages: list[Message] | None = None,
    options: ChatOptions | None = None,
) -> Answer:
    """Run one streamed chat to the end."""
    messages = messages or [system("You are terse."), user("Why is the sky blue?")]
    items: list[StreamItem] = []
    async for item in provider.stream_chat(model, messages, options or ChatOptions()):
        items.append(item)
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    return Answer(text, items)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=KINDS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """Each of the four HTTP engines in turn, as a fake with default settings."""
    with FAKES[request.param]() as fake:
        yield Engine(request.param, fake, MODELS[request.param])


@pytest.fixture
async def provider(engine: Engine, anyio_backend: str) -> AsyncIterator[Provider]:
    p = engine.provider()
    yield p
    await p.aclose()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
