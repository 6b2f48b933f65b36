"""A transparent loopback proxy in front of a real engine that records what the engine said.

Tests that compare Brim's numbers with the engine's own need the engine's words, not
Brim's reading of them. The proxy relays every request unchanged and keeps, per chat
request, when it started and ended and every `timings` object the server streamed (where
llama-server reports `cache_n` and `prompt_n`).

It answers Brim over HTTP/1.0 (the body ends when the connection closes), so it never has to
re-frame a stream.

It also works as a forward proxy (what `HTTP_PROXY` names): a request for an absolute URL
(`GET http://engine.example:8000/v1/models`) is relayed to `target` as if `target` were that
host. `requests` keeps every request line it received, either way, so a test can show that
a proxy got nothing.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "proxy-authorization",
    "proxy-connection",
}


@dataclass
class ProxiedChat:
    started: float
    ended: float | None = None
    body: dict[str, Any] = field(default_factory=dict)
    timings: list[dict[str, Any]] = field(default_factory=list)
    status: int | None = None
    errors: list[str] = field(default_factory=list)  # the server's error messages, in a
    # refusal's body or in the stream

    @property
    def last_timings(self) -> dict[str, Any]:
        return self.timings[-1] if self.timings else {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


class RecordingProxy:
    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.chats: list[ProxiedChat] = []
        self.requests: list[tuple[str, str]] = []  # (method, path or absolute URL)
        self._lock = threading.Lock()
        self._httpd: _Server | None = None

    @property
    def refusals(self) -> list[str]:
        """Every error message the server sent back to a chat request, in order."""
        with self._lock:
            return [message for chat in self.chats for message in chat.errors]

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                proxy._relay(self, "GET")

            def do_POST(self) -> None:
                proxy._relay(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _relay(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append((method, handler.path))
        path = handler.path
        if "://" in path:  # forward-proxy form: the path part goes to `target`
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        chat: ProxiedChat | None = None
        if path.endswith("/chat/completions"):
            chat = ProxiedChat(started=time.monotonic(), body=json.loads(raw or b"{}"))
            with self._lock:
                self.chats.append(chat)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(600, connect=5), trust_env=False) as client,
                client.stream(method, self.target + path, content=raw, headers=headers) as response,
            ):
                handler.send_response(response.status_code)
                if chat is not None:
                    chat.status = response.status_code
                for key, value in response.headers.items():
                    if key.lower() not in HOP_BY_HOP:
                        handler.send_header(key, value)
                handler.end_headers()
                pending = b""
                for piece in response.iter_raw():
                    handler.wfile.write(piece)
                    handler.wfile.flush()
                    if chat is not None:
                        pending = self._note_lines(chat, pending + piece)
                if chat is not None:
                    self._note_lines(chat, pending + b"\n")
        except (httpx.HTTPError, OSError):
            with contextlib.suppress(OSError):
                handler.wfile.flush()
        finally:
            if chat is not None:
                chat.ended = time.monotonic()

    @staticmethod
    def _note_lines(chat: ProxiedChat, data: bytes) -> bytes:
        *lines, rest = data.split(b"\n")
        for line in lines:
            text = line.strip()
            if text.startswith(b"data:"):
                text = text[5:].strip()
            if not text.startswith(b"{"):
                continue
            with contextlib.suppress(ValueError):
                obj = json.loads(text)
                if isinstance(obj, dict) and isinstance(obj.get("timings"), dict):
                    chat.timings.append(obj["timings"])
                if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
                    chat.errors.append(str(obj["error"].get("message", "")))
        return rest
