"""Patterns RE2 cannot run (look-around, backreferences), run where they can be stopped.

Those constructs need a backtracking engine, and Python's `re` is one whose worst case is
exponential and runs in C code that no signal or thread can interrupt. So such a search
runs in a child process with a hard deadline: when the pattern is still going, the child
is killed and the model is told why, instead of the agent hanging for good.

The child never outlives Brim. It runs in a process group of its own, killed whole when the
deadline passes or the search is cancelled (Esc, SIGINT, SIGTERM: the cancellation reaches
the await here at once, not after the deadline); and on Linux it asks the kernel for SIGKILL
when its parent dies (PR_SET_PDEATHSIG), so a Brim that is killed outright takes it along.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from engine.tools.environment import child_environment
from engine.tools.errors import ToolArgumentError, ToolError

ROOT = Path(__file__).resolve().parents[2]

# The child's first act: die with its parent (argv[1] is the parent's pid, so a parent
# that died before the request took effect is noticed at once).
_CHILD = """
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
except (AttributeError, OSError):
    pass  # not Linux: the parent's kill on cancel and at the deadline still holds
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
import json
from pathlib import Path
from engine.tools.errors import ToolArgumentError, ToolError
from engine.tools.search_tool import search
a = json.loads(sys.stdin.read())
try:
    out = {"text": search(Path(a["workspace"]), a["pattern"], a["path"], a["glob"], False,
                          a["ignore_case"], backtracking=True)}
except ToolError as exc:
    out = {"error": str(exc), "argument": isinstance(exc, ToolArgumentError)}
sys.stdout.write(json.dumps(out))
"""


def _kill(proc: asyncio.subprocess.Process) -> None:
    """The child and anything in its group, at once."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if os.name != "nt":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


async def search_in_child(
    workspace: Path,
    pattern: str,
    path: str,
    glob: str | None,
    ignore_case: bool,
    deadline_s: float,
) -> str:
    """search_files' result for a backtracking pattern, or a ToolError when the child had
    to be killed at `deadline_s`."""
    request = {
        "workspace": str(workspace),
        "pattern": pattern,
        "path": path,
        "glob": glob,
        "ignore_case": ignore_case,
    }
    env = child_environment().variables  # no credential reaches the pattern runner
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CHILD,
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"search_files could not start its pattern runner ({exc})") from None
    try:
        stdout, stderr = await asyncio.wait_for(
            proc.communicate(json.dumps(request).encode("utf-8")), deadline_s
        )
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        raise ToolError(
            f"the pattern {pattern!r} was still running after {deadline_s:g} s and was "
            "stopped. It uses look-around or a backreference, which only a backtracking "
            "engine runs, and there a nested repetition such as (a+)+ can take forever. "
            "Simplify the pattern, or search without the look-around and filter the lines."
        ) from None
    except BaseException:  # cancelled (Esc, a signal): the child goes now, not at the deadline
        _kill(proc)
        raise
    try:
        out = json.loads(stdout)
    except ValueError:
        lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
        tail = (lines or ["no output"])[-1]
        raise ToolError(f"search_files' pattern runner failed ({tail})") from None
    if "error" in out:
        raise (ToolArgumentError if out.get("argument") else ToolError)(out["error"])
    return str(out["text"])
