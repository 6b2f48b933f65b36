"""The machinery every fake engine shares: a real HTTP/1.1 server on 127.0.0.1 (random port)
in a background thread, scripted replies, failure injection, and a record of every request.

A fake engine subclasses `FakeServer`, registers routes, and streams with `Exchange`:

    with FakeLlamaServer(n_ctx=4096, slots=2) as srv:
        srv.script_reply("Hello there.")            # the next chat answer
        srv.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "a.txt"})])
        srv.script_reply(fail="die", fail_after=3)  # 3 tokens, then the connection drops
        ... point a provider at srv.url ...
        srv.chat_requests[0].body["messages"]       # what Brim sent
        srv.chat_requests[0].prompt_tokens          # what the fake counted for it

Replies are consumed in order; when the script is empty, `responder(request)` (if set) or
`default_reply` answers. Bodies are streamed with chunked transfer encoding like the real
engines, so a fake that "dies" mid-stream is seen by the client as a truncated body.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Failure = Literal["http500", "overflow", "malformed", "die", "hang", "error_event"]
MIDSTREAM_FAILURES = ("malformed", "die", "hang", "error_event")


@dataclass
class FakeToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # None: the fake invents one (Ollama's client drops it anyway)


@dataclass
class Reply:
    """One scripted chat answer.

    fail:
      "http500"     the engine answers HTTP 500 with its own error body, nothing streamed
      "overflow"    the engine rejects the prompt as too long, whatever its size
      "malformed"   after `fail_after` tokens, a line that is not JSON
      "die"         after `fail_after` tokens, the connection closes mid-body
      "hang"        after `fail_after` tokens, nothing more until the client gives up
      "error_event" after `fail_after` tokens, the engine's in-stream error (status 200)
    """

    text: str = "Hello from the fake engine."
    reasoning: str = ""  # what a thinking model reasons first (tests/helpers/fake_reasoning.py)
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    finish_reason: str | None = None  # None: "tool_calls" with tool calls, else "stop"
    token_delay: float | None = None  # seconds between pieces; None: the server's default
    fail: Failure | None = None
    fail_after: int = 0
    error_message: str = "the model runner crashed"


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: Any  # the parsed JSON body (None when there was none)
    headers: dict[str, str]  # names in lower case
    at: float = field(default_factory=time.monotonic)
    # Filled in for chat requests:
    prompt_tokens: int | None = None  # the prompt as sent, by the fake tokenizer
    evaluated_tokens: int | None = None  # what the engine evaluated (less when it truncated)
    window: int | None = None  # the window in force for this request
    truncated: bool = False  # Ollama cut the prompt silently
    rejected: bool = False  # refused as longer than the window (an overflow error)
    pool_failed: bool = False  # failed because the shared KV pool ran dry (llama-server)
    # What the engine sampled with, in its own names (tests/helpers/engine_sampling.py).
    sampling: dict[str, Any] | None = None
    reply: Reply | None = None


class Exchange:
    """One request/response on the wire, with the streaming primitives fakes need."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: FakeServer) -> None:
        self.handler = handler
        self.server = server
        self.streaming = False

    # -- plain responses ------------------------------------------------------------------

    def send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        h = self.handler
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)
            h.wfile.flush()

    def send_json(self, status: int, obj: Any) -> None:
        self.send(status, json.dumps(obj).encode())

    # -- streams --------------------------------------------------------------------------

    def start_stream(
        self, content_type: str, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        h = self.handler
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()
        self.streaming = True

    def write(self, data: bytes) -> bool:
        """Send one chunk; False when the client has gone (the fake records the disconnect)."""
        try:
            self.handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.handler.wfile.flush()
            return True
        except OSError:
            self.server._note_disconnect()
            self.handler.close_connection = True
            return False

    def end_stream(self) -> None:
        with contextlib.suppress(OSError):
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()

    def die(self) -> None:
        """Drop the connection mid-body, as a crashed engine does."""
        self.handler.close_connection = True
        with contextlib.suppress(OSError):
            self.handler.wfile.flush()
            self.handler.connection.shutdown(socket.SHUT_RDWR)

    def client_gone(self) -> bool:
        sock = self.handler.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def pause(self, seconds: float) -> bool:
        """Sleep between tokens; False (disconnect recorded) when the client went away."""
        deadline = time.monotonic() + seconds
        while True:
            if self.client_gone():
                self.server._note_disconnect()
                self.handler.close_connection = True
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            if self.server._stopping.wait(min(remaining, 0.01)):
                return False

    def hang(self) -> None:
        """Send nothing more until the client gives up or the fake stops."""
        while not self.server._stopping.wait(0.02):
            if self.client_gone():
                self.server._note_disconnect()
                break
        self.handler.close_connection = True


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def get_request(self) -> tuple[Any, Any]:
        """Answers leave at once (no Nagle delay against the client's delayed ACK, which
        made every small sequential request cost about 40 ms, unlike a real engine)."""
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up is normal here (cancellation tests); anything else is a bug
        in a fake and is printed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


# A route fills in the chat fields of the (already recorded) request before it answers.
Route = Callable[[Exchange, RecordedRequest], None]


class FakeServer:
    """Base of the fake engines. Subclasses call `self.route(method, path, fn)` in __init__."""

    name = "fake"
    # What the engine answers for a path it does not have: Go's default (Ollama) here;
    # llama-server and the FastAPI servers send their own JSON.
    not_found: tuple[bytes, str] = (b"404 page not found", "text/plain")

    def __init__(self, *, token_delay: float = 0.0) -> None:
        self.token_delay = token_delay
        self.default_reply = Reply()
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self._routes: dict[tuple[str, str], Route] = {}
        self._overrides: dict[str, tuple[int, bytes, str]] = {}
        self._script: list[Reply] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._disconnected = threading.Event()
        self._disconnects = 0
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with fake._lock:
                    fake._connections.add(self.connection)

            def finish(self) -> None:
                with contextlib.suppress(OSError):
                    super().finish()
                with fake._lock:
                    fake._connections.discard(self.connection)

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.name}-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            with self._lock:
                connections = list(self._connections)
            for sock in connections:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the fake first"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def script_reply(self, text: str = "", **kw: Any) -> Reply:
        """Queue one answer; keyword arguments are `Reply` fields."""
        if not text and not kw.get("tool_calls") and "fail" not in kw:
            text = self.default_reply.text
        reply = Reply(text=text, **kw)
        self.script(reply)
        return reply

    def override(
        self, path: str, status: int, body: str | bytes, content_type: str = "application/json"
    ) -> None:
        """Answer every request to `path` with this, whatever the engine would say."""
        data = body.encode() if isinstance(body, str) else body
        self._overrides[path] = (status, data, content_type)

    def clear_override(self, path: str) -> None:
        self._overrides.pop(path, None)

    def next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.responder is not None:
            return self.responder(request)
        return self.default_reply

    # -- what the fake saw ----------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def disconnects(self) -> int:
        """How many streams the client abandoned before the fake finished them."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        return self._disconnected.wait(timeout)

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
        self._disconnected.set()

    # -- plumbing -------------------------------------------------------------------------

    def route(self, method: str, path: str, fn: Route) -> None:
        self._routes[(method, path)] = fn

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def refuse(self, exchange: Exchange, request: RecordedRequest) -> bool:
        """A chance to answer before routing (an API key check). True: answered."""
        return False

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0]
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        exchange = Exchange(handler, self)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        recorded = RecordedRequest(method, path, body, headers)
        self._record(recorded)
        if self.refuse(exchange, recorded):
            return
        if path in self._overrides:
            status, data, content_type = self._overrides[path]
            exchange.send(status, data, content_type)
            return
        fn = self._routes.get((method, path))
        if fn is None:
            exchange.send(404, *self.not_found)
            return
        if raw and body is None:
            exchange.send_json(400, {"error": "invalid JSON body"})
            return
        fn(exchange, recorded)


def within_tokens(
    pieces: list[str], limit: int, count: Callable[[str], int], head: Callable[[str, int], str]
) -> list[str]:
    """The pieces an answer capped at `limit` tokens streams: a cap counts the model's
    tokens (`count`, the served vocabulary's; `head`: a text's first n tokens), not the
    pieces, so an answer cut at N tokens is N tokens long, as on a real engine."""
    kept: list[str] = []
    used = 0
    for piece in pieces:
        n = count(piece)
        if used + n > limit:
            if limit > used:
                kept.append(head(piece, limit - used))
            break
        kept.append(piece)
        used += n
    return kept


def play(
    server: FakeServer,
    exchange: Exchange,
    reply: Reply,
    pieces: list[str],
    *,
    piece: Callable[[str], bytes],
    error_event: Callable[[], bytes],
    malformed: bytes,
    stop: Callable[[str], bytes | None] | None = None,
) -> bool:
    """Stream `pieces` (already started), injecting the reply's mid-stream failure. True when
    every piece went out and the caller should finish the stream normally. `stop(text)`, asked
    before each piece, gives the bytes of an engine's own failure to end the stream with."""
    delay = reply.token_delay if reply.token_delay is not None else server.token_delay
    failing = reply.fail in MIDSTREAM_FAILURES
    for index, text in enumerate(pieces):
        if failing and index == reply.fail_after:
            break
        ending = stop(text) if stop is not None else None
        if ending is not None:
            exchange.write(ending)
            exchange.end_stream()
            return False
        if not exchange.write(piece(text)) or not exchange.pause(delay):
            return False
    else:
        if not failing:
            return True
    if reply.fail == "malformed":
        exchange.write(malformed)
        exchange.end_stream()
    elif reply.fail == "die":
        exchange.die()
    elif reply.fail == "hang":
        exchange.hang()
    elif reply.fail == "error_event":
        exchange.write(error_event())
        exchange.end_stream()
    return False
