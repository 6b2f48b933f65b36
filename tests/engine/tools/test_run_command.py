"""run_command: never without an allow, exactly what was shown, bounded in time and output."""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path

import pytest

from engine.tools import ConversationApprover, Decision, ToolContext, command_tool

from .conftest import ScriptedApprover

pytestmark = pytest.mark.anyio


async def test_the_headless_default_runs_nothing(registry, workspace: Path):
    ctx = ToolContext(workspace=workspace)
    outcome = await registry.call("run_command", {"command": "touch ran.txt"}, ctx)
    assert outcome.denied and "denied by the user" in outcome.content
    assert not (workspace / "ran.txt").exists()


async def test_a_denied_command_does_not_run(registry, make_ctx, workspace: Path):
    ctx = make_ctx(approver=ScriptedApprover(Decision.DENY))
    outcome = await registry.call("run_command", {"command": "touch ran.txt"}, ctx)
    assert outcome.denied and not (workspace / "ran.txt").exists()


async def test_an_allowed_command_runs_in_the_workspace_with_its_exit_code_and_output(
    registry, make_ctx, workspace: Path
):
    ctx = make_ctx()
    command = "pwd; echo out; echo err >&2; exit 3"
    outcome = await registry.call("run_command", {"command": command}, ctx)
    assert not outcome.is_error
    lines = outcome.content.splitlines()
    assert lines[0] == f"$ {command}"
    assert lines[1].startswith("[exit code 3 · ")
    assert lines[2:] == [str(workspace.resolve()), "out", "[stderr]", "err"]


async def test_the_approval_shows_the_exact_argument_vector_and_folder(
    registry, make_ctx, workspace: Path
):
    approver = ScriptedApprover(Decision.DENY)
    command = "echo 'a b' | wc -c; rm -rf \"$HOME/x\""
    await registry.call("run_command", {"command": command}, make_ctx(approver=approver))
    [request] = approver.asked
    argv = command_tool.command_argv(command)
    assert argv[1:] == ["-c", command]
    assert shlex.split(request.detail.split("Runs as:\n")[1].split("\n")[0]) == argv
    assert f"In folder:\n{workspace.resolve()}" in request.detail
    assert request.summary == f"Run a command in {workspace.resolve()}"


async def test_always_remembers_the_exact_command_only(registry, make_ctx, workspace: Path):
    inner = ScriptedApprover(Decision.ALLOW_ALWAYS)
    ctx = make_ctx(approver=ConversationApprover(inner))
    assert not (await registry.call("run_command", {"command": "echo hi"}, ctx)).is_error
    inner.answer = Decision.DENY
    again = await registry.call("run_command", {"command": "echo hi"}, ctx)
    other = await registry.call("run_command", {"command": "echo hi; touch x"}, ctx)
    assert not again.is_error and "hi" in again.content
    assert other.denied and not (workspace / "x").exists()
    assert [r.detail.split("\n")[1] for r in inner.asked] == ["echo hi", "echo hi; touch x"]


async def test_a_command_past_its_timeout_is_stopped_with_everything_it_started(
    registry, make_ctx, workspace: Path
):
    ctx = make_ctx()
    started = time.monotonic()
    command = "echo started; (sleep 30; touch late.txt) & sleep 30"
    outcome = await registry.call("run_command", {"command": command, "timeout_s": 1}, ctx)
    assert time.monotonic() - started < 10
    assert outcome.is_error and "timed out after 1 s" in outcome.content
    assert "started" in outcome.content
    time.sleep(0.2)
    assert not (workspace / "late.txt").exists()


async def test_a_background_child_left_running_does_not_hold_the_result(registry, make_ctx):
    started = time.monotonic()
    outcome = await registry.call("run_command", {"command": "sleep 30 & echo done"}, make_ctx())
    assert time.monotonic() - started < 10
    assert not outcome.is_error and "done" in outcome.content


async def test_huge_output_keeps_its_start_and_end_and_counts_the_middle(registry, make_ctx):
    command = "echo FIRST; yes middle | head -c 3000000; echo; echo LAST"
    outcome = await registry.call("run_command", {"command": command}, make_ctx(), call_id="c9")
    assert outcome.chars < 120_000  # bounded before shaping
    text = outcome.content
    assert "FIRST" in text
    assert "bytes of output omitted" in text or outcome.truncated


async def test_the_raw_capture_is_bounded_whatever_the_command_prints(workspace: Path):
    report, timed_out = await command_tool.execute(
        "yes abcdefgh | head -c 5000000; echo; echo THE-END", workspace, 30
    )
    assert not timed_out
    assert len(report) < 2 * (command_tool.KEEP_HEAD_BYTES + command_tool.KEEP_TAIL_BYTES)
    assert "bytes of output omitted" in report
    assert report.rstrip().endswith("THE-END")


async def test_a_command_with_no_output_says_so(registry, make_ctx):
    outcome = await registry.call("run_command", {"command": "true"}, make_ctx())
    assert outcome.content.splitlines()[-1] == "(no output)"


async def test_standard_input_is_empty_so_nothing_waits_for_a_keypress(registry, make_ctx):
    started = time.monotonic()
    outcome = await registry.call("run_command", {"command": "cat; echo read-all"}, make_ctx())
    assert "read-all" in outcome.content and time.monotonic() - started < 10


async def test_an_empty_command_and_a_bad_timeout_are_argument_errors(registry, make_ctx):
    approver = ScriptedApprover()
    ctx = make_ctx(approver=approver)
    empty = await registry.call("run_command", {"command": "  "}, ctx)
    bad = await registry.call("run_command", {"command": "true", "timeout_s": 0}, ctx)
    assert empty.is_error and bad.is_error and approver.asked == []


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # gone between the open and the read, too
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
async def test_cancelling_the_turn_stops_the_command_and_its_children(
    registry, make_ctx, workspace: Path
):
    command = "sleep 30 & echo $! > child.pid; wait"
    task = asyncio.ensure_future(registry.call("run_command", {"command": command}, make_ctx()))
    pid_file = workspace / "child.pid"
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text(encoding="utf-8").strip():
            break
        await asyncio.sleep(0.05)
    child = int(pid_file.read_text(encoding="utf-8"))
    assert _alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(40):
        if not _alive(child):
            break
        await asyncio.sleep(0.05)
    assert not _alive(child)
