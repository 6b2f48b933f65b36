"""Hostile engines: the protocol-faithful fakes, whose next chat answer can be raw bytes.

Everything but the chat stream stays as the real engine answers it (models, windows,
/props, /api/show), so Brim starts and probes normally; then a scripted chat answer is sent
byte for byte as given (as a 200 stream of the engine's own content type), whatever it is:
a chunk of a shape no engine sends, bytes that are not UTF-8, a 10 MB line. With nothing
scripted, the fake answers as the real engine would.

    with hostile(FakeVllm(max_model_len=4096)) as srv:
        srv.script_raw(b'data: {"choices":5}\\n\\n', b"data: [DONE]\\n\\n")

A scripted answer may also be an iterator of chunks (a flood that ends only when the client
hangs up, `endless` and `gzip_flood` below), with its own status and headers:

    srv.script_flood(endless(b"x" * 65536, prefix=b'{"error": "'), status=500)
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from tests.helpers.fake_http import Exchange, FakeServer, RecordedRequest

Fake = TypeVar("Fake", bound=FakeServer)

# What a flood sends at most, so that a Brim without limits is seen to fail (its memory
# grows past what the tests allow) without taking the machine down with it.
FLOOD_BYTES = 400 * 1024 * 1024


class _Answer:
    def __init__(
        self,
        chunks: Iterable[bytes],
        status: int = 200,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> None:
        self.chunks = chunks
        self.status = status
        self.headers = headers or {}
        self.content_type = content_type


class _RawScript:
    def __init__(self, server: FakeServer, path: str, content_type: str) -> None:
        self.content_type = content_type
        self._queue: list[_Answer] = []
        self._lock = threading.Lock()
        self._answer = server._routes[("POST", path)]
        server.route("POST", path, self._chat)

    def push(self, answer: _Answer) -> None:
        with self._lock:
            self._queue.append(answer)

    def _chat(self, ex: Exchange, req: RecordedRequest) -> None:
        with self._lock:
            answer = self._queue.pop(0) if self._queue else None
        if answer is None:
            self._answer(ex, req)
            return
        ex.start_stream(answer.content_type or self.content_type, answer.status, answer.headers)
        for chunk in answer.chunks:
            if not ex.write(chunk):
                return
        ex.end_stream()


def hostile(server: Fake) -> Fake:
    """`server` with `script_raw(*chunks)`: its next chat answer is exactly these bytes;
    and `script_flood(chunks, status=, headers=, content_type=)` for an iterator of them."""
    if hasattr(server, "chat_path"):
        path, content_type = server.chat_path, "text/event-stream"
    else:  # Ollama
        path, content_type = "/api/chat", "application/x-ndjson"
    script = _RawScript(server, path, content_type)

    def script_raw(*chunks: bytes) -> None:
        script.push(_Answer(list(chunks)))

    def script_flood(
        chunks: Iterable[bytes],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> None:
        script.push(_Answer(chunks, status, headers, content_type))

    server.script_raw = script_raw  # type: ignore[attr-defined]
    server.script_flood = script_flood  # type: ignore[attr-defined]
    return server


def raw(server: Any, *chunks: bytes) -> None:
    """Queue one raw chat answer on a `hostile` server."""
    server.script_raw(*chunks)


def endless(piece: bytes, *, prefix: bytes = b"", total: int = FLOOD_BYTES) -> Iterator[bytes]:
    """`prefix`, then `piece` again and again: a body that does not end before `total`."""
    yield prefix
    sent = len(prefix)
    while sent < total:
        yield piece
        sent += len(piece)


def gzip_flood(prefix: bytes, *, total: int = FLOOD_BYTES) -> Iterator[bytes]:
    """A gzip body: `prefix`, then `x` up to `total` bytes without a line break. About
    1,000 times smaller on the wire than inflated (400 MB are some 400 KB)."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    yield deflate.compress(prefix) + deflate.flush(zlib.Z_SYNC_FLUSH)
    block = b"x" * (1024 * 1024)
    for _ in range(total // len(block)):
        out = deflate.compress(block)
        if out:
            yield out
    yield deflate.flush()


def gzip_headers() -> dict[str, str]:
    return {"Content-Encoding": "gzip"}
