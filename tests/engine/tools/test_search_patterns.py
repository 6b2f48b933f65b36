"""search_files cannot be stalled by its pattern: it runs on a linear-time engine (RE2).

A backtracking pattern on Python's `re` never ends, in C code no signal stops, so the agent
would hang for good on a pattern the model chose (or a file it read suggested)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.tools import ToolError, search_tool
from engine.tools.search_tool import search

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
ATTACK = "a" * 34 + "!"


def _search_in_child(workspace: Path, pattern: str, timeout_s: float) -> str:
    """The search run in a child process, so a pattern that never ends fails the test
    instead of hanging it."""
    code = (
        "import sys\nfrom pathlib import Path\nfrom engine.tools.search_tool import search\n"
        "print(search(Path(sys.argv[1]), sys.argv[2]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(workspace), pattern],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"search_files with {pattern!r} was still running after {timeout_s:g} s")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_catastrophic_backtracking_pattern_answers_at_once(workspace: Path):
    (workspace / "trap.txt").write_text(f"{ATTACK}\n" * 50 + "aaaa\n", encoding="utf-8")
    started = time.monotonic()
    out = _search_in_child(workspace, "(a+)+$", timeout_s=20)
    assert time.monotonic() - started < 20
    assert out.startswith("1 match for '(a+)+$' in 1 file under .:")
    assert "trap.txt:51: aaaa" in out


def await_call(registry, ctx, args: dict[str, object]):
    import asyncio
    import json

    return asyncio.run(registry.call("search_files", json.dumps(args), ctx, call_id="c1"))


@pytest.mark.parametrize("pattern", ["foo(?=bar)", "(?<!x)foo", r"(o)\1"])
def test_look_around_and_backreferences_still_work_on_the_backtracking_engine(
    workspace: Path, registry, make_ctx, pattern: str
):
    (workspace / "a.txt").write_text("foobar\nfoo\n", encoding="utf-8")
    outcome = await_call(registry, make_ctx(), {"pattern": pattern})
    assert not outcome.is_error, outcome.content
    assert "a.txt:1: foobar" in outcome.content
    assert "ran on Python's backtracking engine, stopped after 20 s" in outcome.content


def test_a_backtracking_pattern_that_explodes_is_killed_at_the_deadline(
    workspace: Path, registry, make_ctx, monkeypatch
):
    monkeypatch.setattr(search_tool, "BACKTRACKING_DEADLINE_S", 3.0)
    (workspace / "trap.txt").write_text(ATTACK + "\n", encoding="utf-8")
    started = time.monotonic()
    outcome = await_call(registry, make_ctx(), {"pattern": "(?=a)(a+)+$"})
    assert time.monotonic() - started < 15
    assert outcome.is_error
    assert "was still running after 3 s and was stopped" in outcome.content
    assert "(a+)+" in outcome.content


def test_an_invalid_pattern_is_still_called_invalid(workspace: Path):
    with pytest.raises(ToolError, match=re.escape("not a valid regular expression")):
        search(workspace, "foo(")


def test_python_style_patterns_the_model_writes_still_work(workspace: Path):
    (workspace / "m.py").write_text("def main(argv):\n    x = 1\n", encoding="utf-8")
    assert "m.py:1: def main(argv):" in search(workspace, r"(?P<kw>def)\s+\w+\(")
    assert "m.py:1:" in search(workspace, r"\bMAIN\b", ignore_case=True)
    assert "m.py:2:" in search(workspace, r"^\s+x = \d$")
