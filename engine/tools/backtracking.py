"""Patterns RE2 cannot run (look-around, backreferences), run where they can be stopped.

Those constructs need a backtracking engine, and Python's `re` is one whose worst case is
exponential and runs in C code that no signal or thread can interrupt. So such a search
runs in a child process with a hard deadline: when the pattern is still going, the child
is killed and the model is told why, instead of the agent hanging for good.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine.tools.environment import child_environment
from engine.tools.errors import ToolArgumentError, ToolError

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, sys
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


def search_in_child(
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
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=deadline_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(
            f"the pattern {pattern!r} was still running after {deadline_s:g} s and was "
            "stopped. It uses look-around or a backreference, which only a backtracking "
            "engine runs, and there a nested repetition such as (a+)+ can take forever. "
            "Simplify the pattern, or search without the look-around and filter the lines."
        ) from None
    except OSError as exc:
        raise ToolError(f"search_files could not start its pattern runner ({exc})") from None
    try:
        out = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ToolError(f"search_files' pattern runner failed ({tail[0]})") from None
    if "error" in out:
        raise (ToolArgumentError if out.get("argument") else ToolError)(out["error"])
    return str(out["text"])
