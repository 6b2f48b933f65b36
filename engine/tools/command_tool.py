"""run_command: one shell command in the workspace, after approval, with a timeout.

The command is handed to a shell explicitly, as `bash -c COMMAND` (`sh` where there is no
bash, `cmd /d /s /c` on Windows), and the approval shows exactly that argument vector and the
folder it runs in, so what the person approves is what runs: no hidden `shell=True`, no
re-quoting in between. Standard input is empty and pagers are switched off, so nothing
waits for a keypress. The command runs in its own process group; a timeout or a cancelled
turn stops the whole group, not only the shell. Output is captured with a bound on each
stream (the start and the end are kept, the middle counted), so a runaway command cannot
fill memory. The command's environment is Brim's without Brim's credentials
(engine/tools/environment.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.tools.approval import ApprovalRequest
from engine.tools.context import ToolContext
from engine.tools.environment import ChildEnvironment, child_environment
from engine.tools.errors import ToolArgumentError, ToolError
from engine.tools.registry import Tool
from engine.tools.workspace import workspace_root

NAME = "run_command"
DEFAULT_TIMEOUT_S = 120
MAX_TIMEOUT_S = 600
# Each stream keeps its first and last this many bytes; the middle is counted, not kept.
KEEP_HEAD_BYTES = 24 * 1024
KEEP_TAIL_BYTES = 24 * 1024
# After the process group is killed, readers get this long to see the pipes close (a
# daemon that left the group may hold them open).
DRAIN_AFTER_KILL_S = 2.0
EXIT_POLL_S = 0.05
MAX_COMMAND_CHARS = 20_000
QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb"}

DESCRIPTION = (
    "Run a shell command in the workspace folder (bash -c on Linux and macOS) and return its "
    "exit code, standard output and standard error. Needs the user's approval. Standard "
    "input is empty and there is no terminal, so interactive programs will not work. "
    f"Stops the command after timeout_s seconds (default {DEFAULT_TIMEOUT_S}, at most "
    f"{MAX_TIMEOUT_S}); anything it leaves running in the background is stopped when it "
    "exits. Long output keeps its beginning and end."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command line to run."},
        "timeout_s": {
            "type": "integer",
            "description": f"Seconds before the command is stopped (default {DEFAULT_TIMEOUT_S}).",
        },
    },
    "required": ["command"],
}


def command_argv(command: str) -> list[str]:
    """The exact argument vector that runs `command` through this platform's shell."""
    if os.name == "nt":
        return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", command]
    return [shutil.which("bash") or "/bin/sh", "-c", command]


def _shown_argv(argv: list[str]) -> str:
    return shlex.join(argv) if os.name != "nt" else " ".join(argv)


def approval_request(command: str, cwd: Path, timeout_s: int) -> ApprovalRequest:
    argv = command_argv(command)
    detail = (
        f"Command:\n{command}\n\nRuns as:\n{_shown_argv(argv)}\n\nIn folder:\n{cwd}\n\n"
        f"Timeout: {timeout_s} s"
    )
    return ApprovalRequest(
        tool=NAME,
        summary=f"Run a command in {cwd}",
        detail=detail,
        always_key=f"command:{cwd}\0{command}",
        always_label="Allow this exact command in this folder for this conversation",
    )


@dataclass
class _Capture:
    """One stream's output: the head and tail kept, the total counted."""

    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = KEEP_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > KEEP_TAIL_BYTES:
                del self.tail[: len(self.tail) - KEEP_TAIL_BYTES]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head + self.tail.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[… {omitted:,} bytes of output omitted …]\n{tail}"


async def _drain(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65_536):
        capture.add(chunk)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Stop the command and everything in its process group (also after the shell itself
    exited: a background child it left would otherwise hold the pipes open)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if os.name != "nt":
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close the process's pipe transport (a no-op once it closed by itself)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _exited(proc: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Whether the command's own process exited within `timeout_s`. Polled, because
    `Process.wait()` also waits for its pipes, which a background child may hold open."""
    deadline = time.monotonic() + timeout_s
    while proc.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(EXIT_POLL_S)
    return True


async def _finish_readers(readers: list[asyncio.Task[None]], wait_s: float) -> None:
    _, pending = await asyncio.wait(readers, timeout=wait_s)
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _report(
    command: str,
    code: int | None,
    elapsed: float,
    out: _Capture,
    err: _Capture,
    timeout_s: int | None,
) -> str:
    if timeout_s is not None:
        status = (
            f"[timed out after {timeout_s} s: the command and everything it started were stopped]"
        )
    else:
        status = f"[exit code {code} · {elapsed:.1f} s]"
    parts = [f"$ {command}", status]
    if out.total:
        parts.append(out.text().rstrip("\n"))
    if err.total:
        parts.append("[stderr]")
        parts.append(err.text().rstrip("\n"))
    if not out.total and not err.total:
        parts.append("(no output)")
    return "\n".join(parts)


async def execute(
    command: str, cwd: Path, timeout_s: int, *, environment: ChildEnvironment | None = None
) -> tuple[str, bool]:
    """Run an approved command; (report, timed out). Never call this without approval.
    It gets `environment` (default: this process's, without the credentials any variable
    holds), never Brim's keys."""
    environment = environment or child_environment()
    env = {**environment.variables, **QUIET_ENV}
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *command_argv(command),
            cwd=str(cwd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=os.name != "nt",
        )
    except OSError as exc:
        raise ToolError(f"the command could not be started ({exc.strerror or exc})") from exc
    out, err = _Capture(), _Capture()
    readers = [
        asyncio.ensure_future(_drain(proc.stdout, out)),
        asyncio.ensure_future(_drain(proc.stderr, err)),
    ]
    try:
        timed_out = not await _exited(proc, timeout_s)
        # The shell has exited (or ran out of time); whatever it left running in its group
        # goes too, so no background child keeps the pipes (or the machine) busy.
        _kill_group(proc)
        await _finish_readers(readers, DRAIN_AFTER_KILL_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), DRAIN_AFTER_KILL_S)
    finally:
        # Also on cancellation: nothing the command started outlives the turn, and the
        # pipes are closed even when a process that left the group still holds them.
        _kill_group(proc)
        for task in readers:
            task.cancel()
        _close_pipes(proc)
        # Reap it before returning (or before the cancellation goes on), so no zombie and
        # no "still running" process object is left behind.
        await _exited(proc, DRAIN_AFTER_KILL_S)
    elapsed = time.monotonic() - started
    report = _report(command, proc.returncode, elapsed, out, err, timeout_s if timed_out else None)
    if environment.withheld:
        report += "\n" + withheld_line(environment.withheld)
    return report, timed_out


def withheld_line(names: tuple[str, ...]) -> str:
    """The report's last line when variables were left out (the model may wonder why a
    build step finds no token)."""
    return f"[not passed to the command, because they hold credentials: {', '.join(names)}]"


def _timeout(value: Any) -> int:
    if value is None:
        return DEFAULT_TIMEOUT_S
    if value < 1:
        raise ToolArgumentError("timeout_s must be at least 1")
    return min(int(value), MAX_TIMEOUT_S)


async def run_command(args: dict[str, Any], ctx: ToolContext) -> str:
    command = args["command"]
    if not command.strip():
        raise ToolArgumentError("command must not be empty")
    if len(command) > MAX_COMMAND_CHARS or "\0" in command:
        raise ToolArgumentError("command is too long or holds a NUL character")
    timeout_s = _timeout(args.get("timeout_s"))
    cwd = workspace_root(ctx.workspace)
    if not cwd.is_dir():
        raise ToolError(f"the workspace {cwd} is not a folder; nothing was run")
    await ctx.require_approval(approval_request(command, cwd, timeout_s))
    environment = child_environment(ctx.credential_variables, ctx.credentials)
    report, timed_out = await execute(command, cwd, timeout_s, environment=environment)
    if timed_out:
        raise ToolError(report)
    return report


TOOL = Tool(
    name=NAME,
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=run_command,
    needs_approval=True,
    aliases={"cmd": "command", "timeout": "timeout_s"},
)
