"""A headless `brim chat` kept open: send one line, read its events until the turn is over."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

Event = dict[str, Any]


class Headless:
    def __init__(self, home: Path, args: list[str], *, prefix: list[str] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}
        cmd = [*(prefix or [sys.executable]), "-m", "engine.cli", "--data-dir", str(home)]
        self.proc = subprocess.Popen(
            [*cmd, "chat", "--headless", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.events: queue.Queue[Event | None] = queue.Queue()
        self.seen: list[Event] = []
        self.stderr = ""
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.events.put(json.loads(line))
        self.events.put(None)

    def until(self, kinds: tuple[str, ...], timeout: float = 30) -> list[Event]:
        """Events up to and including the first of type `kinds`."""
        deadline = time.monotonic() + timeout
        got: list[Event] = []
        while True:
            event = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            if event is None:
                raise AssertionError(f"brim exited with {self.proc.wait(5)}")
            got.append(event)
            self.seen.append(event)
            if event["type"] in kinds:
                return got

    def ready(self, timeout: float = 30) -> list[Event]:
        """Events until the session says it is ready for the next line."""
        deadline = time.monotonic() + timeout
        got: list[Event] = []
        while True:
            got += self.until(("state",), max(deadline - time.monotonic(), 0.01))
            if got[-1]["state"] == "ready":
                return got

    def turn(self, line: str, timeout: float = 30) -> list[Event]:
        """Send one line; its events until ready again after the turn ended or failed."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        got: list[Event] = []
        deadline = time.monotonic() + timeout
        while not any(e["type"] in ("turn_end", "error") for e in got):
            got += self.ready(max(deadline - time.monotonic(), 0.01))
        return got

    def close(self) -> int:
        """End of input: brim finishes and exits; its status (stderr is kept in `stderr`)."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.stderr = self.proc.stderr.read()
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
            self._pump_thread.join(5)
            self.proc.stderr.close()
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def stderr_tail(self) -> str:
        return self.stderr[-2000:]


def errors(events: list[Event]) -> list[Event]:
    return [e for e in events if e["type"] == "error"]


def answered(events: list[Event]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "delta")
