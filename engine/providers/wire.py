"""Limits on what an engine's answer may be on the wire, enforced as the bytes arrive.

Every engine streams UTF-8 lines (SSE events, Ollama's NDJSON). What a broken or hostile
engine can send breaks that before any parser runs: bytes that are not UTF-8 (httpx would
silently turn them into U+FFFD and the answer would go on as if nothing happened), a line
that never ends (httpx would buffer it whole: 10 MB, 10 GB), an error body that never ends,
and a gzip body that inflates a few hundred KB on the wire into gigabytes. All are checked
here, by a response hook that the providers' HTTP clients carry (the official `ollama`
client included), and fail with `WireError`, which each provider reports as a
`protocol_error` naming itself.

The hook decodes a compressed body itself, in pieces of at most `PIECE_BYTES`, and hands
httpx the decoded bytes (the `Content-Encoding` header goes), so every limit counts the
bytes the parser would see, never the smaller ones on the wire.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

# One event holds a few tokens; the largest real one is a whole tool call in one Ollama
# line (a file written in one go). 8 MiB is far above that and far below trouble.
MAX_LINE_BYTES = 8 * 1024 * 1024
# An error body says what failed in a sentence or a small JSON object; past this it is no
# error message but a flood.
MAX_ERROR_BODY_BYTES = 1024 * 1024
# A JSON answer (a model list, /props, /api/show) is read whole before it is parsed, so each
# endpoint has a ceiling far above its real size: 4 MiB unless named here.
MAX_ANSWER_BYTES = 4 * 1024 * 1024
ANSWER_LIMITS: dict[str, int] = {
    "/api/version": 64 * 1024,
    "/health": 64 * 1024,
    "/api/ps": 1024 * 1024,
    "/props": 1024 * 1024,
    "/tokenize": MAX_LINE_BYTES,  # one token id list for a whole message
}
# The tool calls of one answer, all together: each is at most a line, and ten thousand
# small calls are far below this. An engine that streams call fragments for ever stops here.
MAX_CALLS_BYTES = 2 * MAX_LINE_BYTES
# The most a compressed body yields at once: the limits then hold within this much.
PIECE_BYTES = 64 * 1024

STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl")


class WireError(Exception):
    """The engine's bytes broke the wire format; `what` completes "<engine> sent …"."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class CallBytes:
    """What one answer's tool calls have taken so far, against MAX_CALLS_BYTES."""

    def __init__(self, limit: int = MAX_CALLS_BYTES) -> None:
        self.limit = limit
        self.total = 0

    def add(self, *texts: str | None) -> None:
        self.total += 16 + sum(len(t) for t in texts if t)
        if self.total > self.limit:
            raise WireError(f"tool calls longer than {size_text(self.limit)} in one answer")


def size_text(limit: int) -> str:
    """`limit` bytes as a message says it: "8 MiB", "64 KiB", else the exact figure."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        whole, rest = divmod(limit, scale)
        if whole and not rest:
            return f"{whole} {unit}"
    return f"{limit:,} bytes"


def answer_limit(path: str) -> int:
    """The most bytes Brim reads of the JSON answer to `path` (`/v1/models`, `/props`...)."""
    return ANSWER_LIMITS.get(path, MAX_ANSWER_BYTES)


class _Inflater:
    """One layer of `gzip` or `deflate`, inflated in pieces of at most PIECE_BYTES (zlib's
    `max_length`): a body of zeros that would inflate to 400 MB comes out 64 KiB at a time."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding == "gzip"
        self._raw_retry = not self._gzip  # "deflate" is zlib-wrapped, or raw from some servers
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if self._gzip else zlib.MAX_WBITS)

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = self._inflate.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                if not self._raw_retry:
                    raise WireError(f"a body that is not valid {self._name}") from exc
                self._raw_retry = False
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._raw_retry = False
            if out:
                yield out
            data = self._inflate.unconsumed_tail
            if self._inflate.eof or (not data and len(out) < PIECE_BYTES):
                return

    def flush(self) -> bytes:
        try:
            return self._inflate.flush(PIECE_BYTES)
        except zlib.error as exc:
            raise WireError(f"a body that is not valid {self._name}") from exc

    @property
    def _name(self) -> str:
        return "gzip" if self._gzip else "deflate"


def _decode(layers: list[_Inflater], data: bytes) -> Iterator[bytes]:
    """`data` through every layer (the last encoding applied is undone first)."""
    if not layers:
        if data:
            yield data
        return
    for piece in layers[0].pieces(data):
        yield from _decode(layers[1:], piece)


def _flush(layers: list[_Inflater]) -> Iterator[bytes]:
    for index, layer in enumerate(layers):
        yield from _decode(layers[index + 1 :], layer.flush())


class GuardedStream(httpx.AsyncByteStream):
    """The body, decoded, passed through unchanged while it stays within the limits.

    `max_line`: the longest line (None: any); `max_body`: the whole body (None: any);
    `utf8`: the bytes must be UTF-8; `encodings`: the body's `Content-Encoding` values in
    the order they were applied (each `gzip` or `deflate`); `what` names the body in the
    error for `max_body` ("an error body (HTTP 500)"); `line_what` names a line too long."""

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        *,
        max_line: int | None,
        max_body: int | None = None,
        utf8: bool = True,
        encodings: tuple[str, ...] = (),
        what: str = "a body",
        line_what: str = "a stream line",
    ) -> None:
        self._inner = inner
        self._max_line = max_line
        self._max_body = max_body
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict") if utf8 else None
        self._layers = [_Inflater(e) for e in reversed(encodings)]
        self._what = what
        self._line_what = line_what
        self._line = 0  # bytes since the last newline
        self._body = 0  # bytes so far

    def _check(self, chunk: bytes) -> None:
        if self._decoder is not None:
            try:
                self._decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise WireError("bytes that are not UTF-8") from exc
        self._body += len(chunk)
        if self._max_body is not None and self._body > self._max_body:
            raise WireError(f"{self._what} longer than {size_text(self._max_body)}")
        if self._max_line is None:
            return
        newline = chunk.rfind(b"\n")
        self._line = len(chunk) - newline - 1 if newline >= 0 else self._line + len(chunk)
        if self._line > self._max_line:
            raise WireError(f"{self._line_what} longer than {size_text(self._max_line)}")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self._inner:
            for chunk in _decode(self._layers, raw):
                self._check(chunk)
                yield chunk
        for chunk in _flush(self._layers):
            self._check(chunk)
            yield chunk
        if self._decoder is not None:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError as exc:
                raise WireError(
                    "bytes that are not UTF-8 (a character cut off at the end)"
                ) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


def _encodings(response: httpx.Response) -> tuple[str, ...]:
    """The body's encodings, in the order applied; WireError for one Brim does not undo
    (httpx would pass it through as if it were text, or decode it without a bound)."""
    found: list[str] = []
    for value in response.headers.get_list("content-encoding", split_commas=True):
        value = value.strip().lower()
        if value in ("", "identity"):
            continue
        if value not in ("gzip", "deflate"):
            raise WireError(f"a body encoded as {value!r}, which Brim does not read")
        found.append(value)
    return tuple(found)


def _streamed(response: httpx.Response) -> bool:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type in STREAM_TYPES


async def guard_response(response: httpx.Response) -> None:
    """An httpx `response` event hook. Every body is decoded here, bounded. A successful
    answer must be UTF-8 and end its lines in time, whatever its content type says (a
    stream sent as `application/json` is still a stream); an error body is read leniently,
    to say what failed, up to MAX_ERROR_BODY_BYTES. A JSON answer's total is bounded by
    the caller (`read_capped`), which knows the endpoint."""
    if not isinstance(response.stream, httpx.AsyncByteStream):
        return
    encodings = _encodings(response)
    if encodings:
        del response.headers["content-encoding"]  # decoded below; httpx must not again
    if response.status_code >= 400:
        response.stream = GuardedStream(
            response.stream,
            max_line=None,
            max_body=MAX_ERROR_BODY_BYTES,
            utf8=False,
            encodings=encodings,
            what=f"an error body (HTTP {response.status_code})",
        )
        return
    response.stream = GuardedStream(
        response.stream,
        max_line=MAX_LINE_BYTES,
        encodings=encodings,
        line_what="a stream line" if _streamed(response) else "a line",
    )


async def read_capped(response: httpx.Response, limit: int, what: str) -> bytes:
    """The whole (decoded) body of a streamed `response`, or WireError once it passes
    `limit` bytes: "`what` longer than 4 MiB"."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise WireError(f"{what} longer than {size_text(limit)}")
    return bytes(body)


def guard_hooks() -> dict[str, list[Any]]:
    """`event_hooks` for an `httpx.AsyncClient` that talks to an engine."""
    return {"response": [guard_response]}
