"""Limits on what an engine's answer may be on the wire, enforced as the bytes arrive.

Every engine streams UTF-8 lines (SSE events, Ollama's NDJSON). Two things a broken or
hostile engine can send break that before any parser runs: bytes that are not UTF-8
(httpx would silently turn them into U+FFFD and the answer would go on as if nothing
happened) and a line that never ends (httpx would buffer it whole: 10 MB, 10 GB). Both
are checked here, on the raw body of every successful streamed answer, by a response
hook that the providers' HTTP clients carry (the official `ollama` client included), and
fail with `WireError`, which each provider reports as a `protocol_error` naming itself.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from typing import Any

import httpx

# One event holds a few tokens; the largest real one is a whole tool call in one Ollama
# line (a file written in one go). 8 MiB is far above that and far below trouble.
MAX_LINE_BYTES = 8 * 1024 * 1024

STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl")


class WireError(Exception):
    """The engine's bytes broke the wire format; `what` completes "<engine> sent …"."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class GuardedStream(httpx.AsyncByteStream):
    """The raw body, passed through unchanged while it stays within the limits."""

    def __init__(self, inner: httpx.AsyncByteStream, *, max_line: int | None) -> None:
        self._inner = inner
        self._max_line = max_line
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._line = 0  # bytes since the last newline

    def _check(self, chunk: bytes) -> None:
        try:
            self._decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise WireError("bytes that are not UTF-8") from exc
        if self._max_line is None:
            return
        newline = chunk.rfind(b"\n")
        self._line = len(chunk) - newline - 1 if newline >= 0 else self._line + len(chunk)
        if self._line > self._max_line:
            mib, rest = divmod(self._max_line, 1024 * 1024)
            size = f"{mib} MiB" if mib and not rest else f"{self._max_line:,} bytes"
            raise WireError(f"a stream line longer than {size}")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._check(chunk)
            yield chunk
        try:
            self._decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise WireError("bytes that are not UTF-8 (a character cut off at the end)") from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


def _identity(response: httpx.Response) -> bool:
    """Not compressed: the raw bytes are the text (a gzip body is checked by its parser)."""
    return response.headers.get("content-encoding", "identity").lower() in ("", "identity")


def _streamed(response: httpx.Response) -> bool:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type in STREAM_TYPES


async def guard_response(response: httpx.Response) -> None:
    """An httpx `response` event hook. A successful answer must be UTF-8 (error bodies are
    read leniently, to say what failed); a streamed one must also end its lines in time (a
    plain JSON answer, such as a long /tokenize list, is one line of any length)."""
    if response.status_code >= 400 or not _identity(response):
        return
    if isinstance(response.stream, httpx.AsyncByteStream):
        limit = MAX_LINE_BYTES if _streamed(response) else None
        response.stream = GuardedStream(response.stream, max_line=limit)


def guard_hooks() -> dict[str, list[Any]]:
    """`event_hooks` for an `httpx.AsyncClient` that talks to an engine."""
    return {"response": [guard_response]}
