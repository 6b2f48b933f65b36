"""The embedded engine's child process and the pipe to it: started with this interpreter,
read on a thread of its own, each reply delivered to the request that waits for it.

The provider (engine/providers/embedded.py) owns one child at a time and restarts it after
a crash; this module knows nothing of models or requests beyond their ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from engine.providers.embedded_protocol import read_message, write_message
from engine.providers.errors import (
    ContextOverflow,
    ModelNotFound,
    ProtocolError,
    ProviderError,
    ServerError,
)

# How long a closing child may take to finish its current token before it is killed.
CHILD_EXIT_GRACE_S = 10.0


def exit_description(code: int | None) -> str:
    if code is None:
        return "the pipe to it closed"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit status {code}"


def child_command() -> list[str]:
    """How the child is started: this interpreter running the child module. A fresh
    interpreter inherits no Qt state and never re-imports the parent's main module."""
    return [sys.executable, "-m", "engine.providers.embedded_child"]


def child_env() -> dict[str, str]:
    """The parent's environment, with Brim's source root importable in the child."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class EngineChild:
    """One child process, its pipe, and the thread that reads the pipe.

    Each request subscribes a queue under its id; the reader delivers the child's answers
    there, and when the pipe closes it delivers {type: crashed} to every subscriber."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            child_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
            start_new_session=os.name == "posix",  # the terminal's Ctrl-C is the parent's
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._to_child: IO[bytes] = self.process.stdin
        self._from_child: IO[bytes] = self.process.stdout
        self.info: dict[str, Any] | None = None  # the child's `loaded` message
        self.alive = True
        self.closing = False  # Brim itself is stopping it: its end is no crash
        self.exit_description = ""
        self._routes: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = {}
        self._routes_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="brim-embedded-pipe", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # EOF, a broken pipe, an unreadable frame
            while True:
                message = read_message(self._from_child)
                rid = message.get("id")
                with self._routes_lock:
                    route = self._routes.get(rid) if isinstance(rid, str) else None
                if route is not None:
                    deliver_to(route, message)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2)
        self.exit_description = exit_description(self.process.returncode)
        with self._routes_lock:
            self.alive = False
            routes = list(self._routes.values())
        for route in routes:
            deliver_to(route, {"type": "crashed"})

    def subscribe(self, request_id: str) -> asyncio.Queue[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        route = (asyncio.get_running_loop(), queue)
        with self._routes_lock:
            self._routes[request_id] = route
            if not self.alive:
                queue.put_nowait({"type": "crashed"})
        return queue

    def unsubscribe(self, request_id: str) -> None:
        with self._routes_lock:
            self._routes.pop(request_id, None)

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            write_message(self._to_child, message)

    def cancel(self, request_id: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.send({"op": "cancel", "id": request_id})

    def close(self) -> None:
        """Ask the child to exit (it ends any answer in progress first); make sure it does."""
        self.closing = True
        with contextlib.suppress(OSError, ValueError):
            self.send({"op": "stop"})
        with contextlib.suppress(OSError):
            self._to_child.close()
        try:
            # Generous: on a loaded machine a child finishing its current token can take
            # seconds; killing it is the last resort, not the plan.
            self.process.wait(timeout=CHILD_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=3)
        self._reader.join(timeout=3)
        with contextlib.suppress(OSError):
            self._from_child.close()


def deliver_to(route: tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]], message: Any) -> None:
    loop, queue = route
    with contextlib.suppress(RuntimeError):  # that loop has closed: nobody is listening
        loop.call_soon_threadsafe(queue.put_nowait, message)


def error_from(message: dict[str, Any]) -> ProviderError:
    text = str(message.get("message") or "the embedded engine failed")
    kind = message.get("kind")
    if kind == "context_overflow":
        return ContextOverflow(
            text, prompt_tokens=message.get("prompt_tokens"), window=message.get("window")
        )
    if kind == "model_not_found":
        return ModelNotFound(text)
    if kind == "protocol_error":
        return ProtocolError(text)
    return ServerError(text)
