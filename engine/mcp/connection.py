"""One MCP server over the official SDK: start, list its tools, call one, stop.

The SDK's client is an async context manager whose task group must be entered and left by
one task, while Brim starts a server from inside a turn and stops it when the conversation
closes (another task). So each connection is hosted by a task of its own: it enters the
client, hands its tools over, and waits to be told to stop. Calls come from any task.

Every fault is an `McpFault` of a kind: a server that cannot start (`start_failed`), one
that is gone (`exited`: the host task ended, or the pipe closed under a call), one that
does not answer within the call's timeout (`timeout`), one that writes what is not JSON-RPC
(`malformed`). A connection that failed is started afresh on its next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
from typing import IO, Any, TextIO, cast

import mcp_types as types
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from engine.config.mcp_servers import McpServer
from engine.mcp.errors import McpFault
from engine.mcp.launch import stdio_parameters

log = logging.getLogger(__name__)
# The SDK logs a traceback for every line a server writes that is not JSON-RPC; Brim says
# it once, as a fault of kind `malformed`.
logging.getLogger("mcp.client.stdio").setLevel(logging.CRITICAL)

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 6.0
STDERR_TAIL_CHARS = 300


class McpConnection:
    def __init__(self, server: McpServer, *, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.server = server
        self.start_timeout_s = start_timeout_s
        self._client: Client | None = None
        self._host: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._tools: list[types.Tool] = []
        self._garbage: list[str] = []  # what the server wrote that is not JSON-RPC
        self._gone: asyncio.Event = asyncio.Event()
        # The server's stderr, kept for the words of a failure (one file per start).
        self._stderr: IO[str] | None = None
        self._starting = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._client is not None and not self._gone.is_set()

    @property
    def listed(self) -> list[types.Tool]:
        """The tools the server listed when it last started."""
        return self._tools

    @property
    def name(self) -> str:
        return self.server.name

    async def start(self) -> list[types.Tool]:
        """The server's tools, starting it first when it is not running."""
        async with self._starting:
            if self.running:
                return self._tools
            await self._stop_host()
            self._stop, self._gone, self._garbage = asyncio.Event(), asyncio.Event(), []
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            ready: asyncio.Future[list[types.Tool]] = asyncio.get_running_loop().create_future()
            self._host = asyncio.create_task(self._run(ready), name=f"mcp:{self.name}")
            try:
                self._tools = await asyncio.wait_for(
                    asyncio.shield(ready), timeout=self.start_timeout_s
                )
            except TimeoutError:
                await self._stop_host()
                if self._garbage:
                    raise McpFault(
                        self.name, "malformed", "wrote what is not JSON-RPC: " + self._garbage[0]
                    ) from None
                raise McpFault(
                    self.name, "start_failed", f"did not answer within {self.start_timeout_s:g} s"
                ) from None
            except McpFault:
                await self._stop_host()
                raise
            except Exception as exc:
                await self._stop_host()
                raise McpFault(self.name, "start_failed", self._why(exc)) from None
            return self._tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One tool call within the server's timeout; `McpFault` for anything but a result."""
        await self.start()
        client = self._client
        assert client is not None
        call = asyncio.ensure_future(
            client.call_tool(tool, arguments, read_timeout_seconds=self.server.timeout_s)
        )
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            done, _ = await asyncio.wait(
                {call, gone}, timeout=self.server.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
        if call in done:
            try:
                result = call.result()
            except Exception as exc:
                raise self._call_fault(tool, exc) from None
            if isinstance(result, types.CallToolResult):
                return result
            raise McpFault(self.name, "malformed", "answered with no tool result", tool)
        call.cancel()
        with contextlib.suppress(BaseException):
            await call
        if gone in done or self._gone.is_set():
            raise McpFault(self.name, "exited", self._exited_text(), tool)
        # A server that hangs is stopped: its next call starts it afresh.
        await self.stop()
        raise McpFault(
            self.name, "timeout", f"{tool} gave no answer within {self.server.timeout_s:g} s", tool
        )

    async def stop(self) -> None:
        """Stop the server (the SDK closes its stdin, then ends its process group)."""
        await self._stop_host()

    async def _stop_host(self) -> None:
        host, self._host = self._host, None
        ready, self._client = self._client is not None, None
        if host is None:
            return
        self._stop.set()
        if not ready:
            host.cancel()  # never ready: there is no session to close politely
        done, _ = await asyncio.wait({host}, timeout=STOP_TIMEOUT_S)
        if not done:
            host.cancel()
            await asyncio.wait({host}, timeout=STOP_TIMEOUT_S)
        if self._stderr is not None:
            self._stderr.close()

    async def _run(self, ready: asyncio.Future[list[types.Tool]]) -> None:
        try:
            async with Client(
                self._target(),
                read_timeout_seconds=self.server.timeout_s,
                message_handler=self._on_message,
            ) as client:
                listed = await client.list_tools()
                self._client = client
                if not ready.done():
                    ready.set_result(list(listed.tools))
                await self._stop.wait()
        except BaseException as exc:  # the host ends on any failure; a waiter hears it
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, Exception)
                    else McpFault(self.name, "start_failed", "cancelled")
                )
                ready.exception()  # retrieved here: a start that timed out is not waiting
            elif not self._stop.is_set():
                log.info("MCP server %s ended: %s", self.name, exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            self._gone.set()

    def _target(self) -> Any:
        if self.server.url is not None:
            return self.server.url
        # Its stderr is kept (the tail words a failure), not mixed into Brim's own.
        errlog = cast(TextIO, self._stderr if self._stderr is not None else sys.stderr)
        return stdio_client(stdio_parameters(self.server), errlog=errlog)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            text = str(message)
            first = text.splitlines()[0][:120] if text else type(message).__name__
            self._garbage.append(first)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read().strip()
        except (OSError, ValueError):
            return ""
        return text[-STDERR_TAIL_CHARS:]

    def _why(self, exc: BaseException) -> str:
        """A start failure in words: the exception, the server's garbage or its stderr."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if self._garbage:
            return "wrote what is not JSON-RPC on stdout: " + self._garbage[0]
        if isinstance(exc, FileNotFoundError | PermissionError):
            return f"cannot run {self.server.command[0] if self.server.command else '?'}: {exc}"
        text = str(exc) or type(exc).__name__
        tail = self._stderr_tail()
        return f"{text[:200]}" + (f"; it said: {tail}" if tail else "")

    def _exited_text(self) -> str:
        return "the server exited during the call"

    def _call_fault(self, tool: str, exc: BaseException) -> McpFault:
        code = getattr(getattr(exc, "error", None), "code", None)
        if self._gone.is_set() or code == CONNECTION_CLOSED:
            return McpFault(self.name, "exited", self._exited_text(), tool)
        if self._garbage:
            return McpFault(
                self.name,
                "malformed",
                "answered with what is not JSON-RPC: " + self._garbage[-1],
                tool,
            )
        if isinstance(exc, TimeoutError) or code == REQUEST_TIMEOUT:
            return McpFault(self.name, "timeout", f"{tool} gave no answer in time", tool)
        return McpFault(self.name, "call_failed", f"{tool} failed: {str(exc)[:200]}", tool)
