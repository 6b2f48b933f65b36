"""Hostile engines: the protocol-faithful fakes, whose next chat answer can be raw bytes.

Everything but the chat stream stays as the real engine answers it (models, windows,
/props, /api/show), so Brim starts and probes normally; then a scripted chat answer is sent
byte for byte as given (as a 200 stream of the engine's own content type), whatever it is:
a chunk of a shape no engine sends, bytes that are not UTF-8, a 10 MB line. With nothing
scripted, the fake answers as the real engine would.

    with hostile(FakeVllm(max_model_len=4096)) as srv:
        srv.script_raw(b'data: {"choices":5}\\n\\n', b"data: [DONE]\\n\\n")
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from tests.helpers.fake_http import Exchange, FakeServer, RecordedRequest

Fake = TypeVar("Fake", bound=FakeServer)


class _RawScript:
    def __init__(self, server: FakeServer, path: str, content_type: str) -> None:
        self.content_type = content_type
        self._queue: list[list[bytes]] = []
        self._lock = threading.Lock()
        self._answer = server._routes[("POST", path)]
        server.route("POST", path, self._chat)

    def push(self, chunks: list[bytes]) -> None:
        with self._lock:
            self._queue.append(chunks)

    def _chat(self, ex: Exchange, req: RecordedRequest) -> None:
        with self._lock:
            chunks = self._queue.pop(0) if self._queue else None
        if chunks is None:
            self._answer(ex, req)
            return
        ex.start_stream(self.content_type)
        for chunk in chunks:
            if not ex.write(chunk):
                return
        ex.end_stream()


def hostile(server: Fake) -> Fake:
    """`server` with `script_raw(*chunks)`: its next chat answer is exactly these bytes."""
    if hasattr(server, "chat_path"):
        path, content_type = server.chat_path, "text/event-stream"
    else:  # Ollama
        path, content_type = "/api/chat", "application/x-ndjson"
    script = _RawScript(server, path, content_type)

    def script_raw(*chunks: bytes) -> None:
        script.push(list(chunks))

    server.script_raw = script_raw  # type: ignore[attr-defined]
    return server


def raw(server: Any, *chunks: bytes) -> None:
    """Queue one raw chat answer on a `hostile` server."""
    server.script_raw(*chunks)
