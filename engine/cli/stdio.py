"""The headless chat's standard streams: events out as JSON Lines (stopping when the reader
goes away), lines in from stdin read on a thread, and streams the shell closed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engine.events import (
    AcceptedEvent,
    ErrorEvent,
    Event,
    TurnEndEvent,
    ViewRequestEvent,
    WithdrawnEvent,
)
from engine.memory.plaintext import safe_json
from engine.providers.engine_text import clean
from engine.redaction import without_known

_READ_CHUNK = 1 << 16  # bytes per read of stdin


class HeadlessOutput:
    """stdout as JSON Lines. When its reader goes away (`brim chat --headless | head -3`),
    the chat must stop rather than keep the engine generating for nobody: `closed` turns
    true and `on_close` runs once (it cancels the turn; the partial answer is kept)."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self.closed = False
        # The engine keys no line may show (an error that echoed one is redacted already
        # when its text looks like a key; these are found whatever they look like).
        self._keys = tuple(k for k in keys if k)
        self.on_close: Callable[[], None] | None = None
        # The error the chat last ended on (the engine could not be reached, the model is
        # not there, ...); a later turn that finishes clears it. A script reads it as exit 1.
        self.failure: ErrorEvent | None = None

    def write(self, event: Event) -> None:
        if isinstance(event, ErrorEvent):
            self.failure = event
        elif isinstance(event, TurnEndEvent):
            self.failure = None
        # A view request's notice says it in words; a line read is taken as it was written.
        if self.closed or isinstance(event, (ViewRequestEvent, AcceptedEvent, WithdrawnEvent)):
            return
        data = event.to_dict()
        try:
            try:
                # A lone surrogate (text no engine should send, from wherever it came)
                # becomes U+FFFD, so encoding the line cannot fail on it.
                # What JSON leaves raw that a terminal obeys (C1 controls, bidi overrides)
                # is written as escapes, as `brim memory list --json` does.
                line = clean(safe_json(data))
                sys.stdout.write(without_known(line, self._keys) + "\n")
            except UnicodeEncodeError:  # a stdout that is not UTF-8: escaped JSON is ASCII
                sys.stdout.write(without_known(json.dumps(data), self._keys) + "\n")
            sys.stdout.flush()
        except UnicodeEncodeError:  # not a closed stdout: the line is lost, the chat goes on
            logging.getLogger(__name__).warning("an event could not be written to stdout")
        except (BrokenPipeError, ValueError):  # ValueError: the stream itself was closed
            self.closed = True
            silence_stdout()
            if self.on_close is not None:
                self.on_close()


def silence_stdout() -> None:
    """Point stdout at the null device, so that what is still buffered, flushed at exit,
    does not end the run with 'Exception ignored … BrokenPipeError'."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def reopen_closed_streams() -> None:
    """A stream the shell closed (`brim … >&-`, `<&-`) is None in Python: treat it as the
    null device, as if the user had written `> /dev/null`, instead of failing on it."""
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the run
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115


@dataclass(frozen=True)
class InputLine:
    text: str
    replaced: bool  # the bytes were not UTF-8: undecodable ones became U+FFFD


def decode_line(raw: bytes) -> InputLine:
    """One line of stdin. Bytes that are not UTF-8 would otherwise reach the engine as lone
    surrogates that no JSON encoder accepts, killing the whole run on the first request."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    try:
        return InputLine(raw.decode("utf-8"), False)
    except UnicodeDecodeError:
        return InputLine(raw.decode("utf-8", errors="replace"), True)


async def read_lines(queue: asyncio.Queue[InputLine | None]) -> None:
    """Feed stdin's lines to `queue` from a thread, then None at the end of input.

    The thread reads the descriptor with `os.read`, never through `sys.stdin.buffer`: a
    thread blocked inside that buffered reader holds its lock, and when a signal ends the
    chat while stdin is still open, the interpreter's shutdown tries to take the same lock
    and aborts the process (`Fatal Python error: _enter_buffered_busy`, SIGABRT) instead
    of exiting 143 or 130. A bare descriptor read holds no lock that shutdown needs."""
    loop = asyncio.get_running_loop()
    fd = _stdin_fd()

    def put(line: InputLine | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, line)
            return True
        except RuntimeError:  # the chat already ended (a signal) and its loop is closed
            return False

    def pump() -> None:
        pending = bytearray()
        try:
            while fd is not None and (chunk := os.read(fd, _READ_CHUNK)):
                pending += chunk
                if b"\n" not in chunk:
                    continue
                *lines, rest = bytes(pending).split(b"\n")
                pending = bytearray(rest)
                for raw in lines:
                    if not put(decode_line(raw + b"\n")):
                        return
            if pending:
                put(decode_line(bytes(pending)))
        except (OSError, ValueError):
            pass  # stdin went away: that is the end of input, like EOF
        finally:  # whatever happened, the chat must learn that input ended
            put(None)

    threading.Thread(target=pump, name="brim-stdin", daemon=True).start()


def _stdin_fd() -> int | None:
    """stdin's descriptor; None when stdin is not backed by one (then there is no input)."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None
