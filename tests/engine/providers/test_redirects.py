"""An engine's redirect is refused, never followed: the conversation goes nowhere else.

The official ollama client follows redirects, so an Ollama answering `/api/chat` with 307
to another port would get the whole conversation re-sent there. Brim's clients follow none:
the user sees an error naming both URLs, the target receives nothing, and the message
stays for the next line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.messages import user
from engine.providers.base import ChatOptions
from engine.providers.errors import ProtocolError
from engine.providers.registry import make_provider
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeServer
from tests.reliability.headless import Headless, answered, errors

pytestmark = pytest.mark.anyio

CHAT_PATHS = {"ollama": "/api/chat", "llamacpp": "/v1/chat/completions"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _redirecting(base: type[FakeServer]) -> Any:
    class Redirecting(base):  # type: ignore[misc, valid-type]
        """The engine, but its chat answers `redirect_status` to `redirect_to` while set."""

        redirect_to: str | None = None
        redirect_status = 307

        def refuse(self, exchange: Any, request: Any) -> bool:
            if super().refuse(exchange, request):
                return True
            if self.redirect_to is None or request.path not in CHAT_PATHS.values():
                return False
            handler = exchange.handler
            handler.send_response(self.redirect_status)
            handler.send_header("Location", self.redirect_to)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return True

    return Redirecting


FAKES = {"ollama": _redirecting(FakeOllama), "llamacpp": _redirecting(FakeLlamaServer)}


@pytest.mark.parametrize("status", [307, 301, 308])
@pytest.mark.parametrize("kind", ["ollama", "llamacpp"])
async def test_a_redirected_chat_is_refused_and_the_target_receives_nothing(kind: str, status: int):
    with FAKES[kind]() as engine, type(engine)() as elsewhere:
        path = CHAT_PATHS[kind]
        engine.redirect_to = f"{elsewhere.url}{path}"
        engine.redirect_status = status
        provider = make_provider(kind, engine.url)
        try:
            model = (await provider.list_models())[0].id
            with pytest.raises(ProtocolError) as caught:
                async for _ in provider.stream_chat(model, [user("secret plans")], ChatOptions()):
                    pass
        finally:
            await provider.aclose()
        assert elsewhere.requests == []
    message = caught.value.message
    assert f"{engine.url}{path}" in message and f"{elsewhere.url}{path}" in message
    assert f"redirect (HTTP {status})" in message and "does not follow" in message


async def test_a_redirect_to_a_relative_location_names_the_resolved_url():
    with FAKES["llamacpp"]() as engine:
        engine.redirect_to = "/elsewhere/chat"
        provider = make_provider("llamacpp", engine.url)
        try:
            with pytest.raises(ProtocolError) as caught:
                async for _ in provider.stream_chat("m", [user("hi")], ChatOptions()):
                    pass
        finally:
            await provider.aclose()
    assert f"to {engine.url}/elsewhere/chat," in caught.value.message


def test_a_headless_chat_says_both_urls_and_the_next_line_works(tmp_path: Path):
    with FAKES["ollama"]() as engine, FakeOllama() as elsewhere:
        engine.redirect_to = f"{elsewhere.url}/api/chat"
        model = next(iter(engine.models))
        args = ["--provider", "ollama", "--base-url", engine.url, "--model", model]
        chat = Headless(tmp_path, args)
        try:
            chat.ready()
            first = chat.turn("first: the plans are in the safe")
            engine.redirect_to = None
            second = chat.turn("second line")
        finally:
            chat.close()
        sent = engine.requests_to("/api/chat")
        assert elsewhere.requests == []
    (error,) = errors(first)
    assert error["kind"] == "protocol_error"
    assert f"{engine.url}/api/chat" in error["message"]
    assert f"{elsewhere.url}/api/chat" in error["message"]
    assert answered(second)
    # The refused line was kept: the next request carries it before the new one (two user
    # lines in a row go as one message).
    users = "\n\n".join(m["content"] for m in sent[-1].body["messages"] if m["role"] == "user")
    assert users.endswith("first: the plans are in the safe\n\nsecond line")
    assert "\x1b" not in chat.stderr
