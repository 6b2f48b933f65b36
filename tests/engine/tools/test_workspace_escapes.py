"""Every way out of the workspace is refused, by the resolver and by every file tool."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.tools import PathOutsideWorkspace, ToolArgumentError, resolve_inside

pytestmark = pytest.mark.anyio


def test_a_relative_path_resolves_inside_the_workspace(workspace: Path):
    (workspace / "src").mkdir()
    assert resolve_inside(workspace, "src/app.py") == workspace.resolve() / "src" / "app.py"
    assert resolve_inside(workspace, ".") == workspace.resolve()


def test_an_absolute_path_inside_the_workspace_is_allowed(workspace: Path):
    target = workspace / "notes.md"
    assert resolve_inside(workspace, str(target)) == target.resolve()


def test_an_absolute_path_outside_is_refused(workspace: Path, outside: Path):
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, str(outside / "secret.txt"))


def test_dot_dot_escapes_are_refused_even_when_they_come_back_in_later(workspace: Path):
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "../outside/secret.txt")
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "src/../../outside")
    # Going up and back into the workspace by name lands inside, so it is fine.
    assert resolve_inside(workspace, f"../{workspace.name}/a.txt") == workspace.resolve() / "a.txt"


def test_a_sibling_folder_sharing_the_workspace_name_as_prefix_is_outside(tmp_path: Path):
    ws = tmp_path / "proj"
    ws.mkdir()
    (tmp_path / "proj-secrets").mkdir()
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(ws, str(tmp_path / "proj-secrets" / "key"))


def test_a_symlinked_file_pointing_outside_is_refused(workspace: Path, outside: Path):
    (workspace / "innocent.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "innocent.txt")


def test_a_file_inside_a_symlinked_folder_pointing_outside_is_refused(
    workspace: Path, outside: Path
):
    (workspace / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "docs/secret.txt")
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "docs/new-file.txt")


def test_a_dangling_symlink_is_judged_by_where_it_would_lead(workspace: Path, outside: Path):
    (workspace / "later.txt").symlink_to(outside / "does-not-exist-yet.txt")
    with pytest.raises(PathOutsideWorkspace):
        resolve_inside(workspace, "later.txt")


def test_a_symlink_that_stays_inside_is_followed(workspace: Path):
    (workspace / "real.txt").write_text("x", encoding="utf-8")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert resolve_inside(workspace, "alias.txt") == (workspace / "real.txt").resolve()


def test_a_workspace_reached_through_a_symlink_still_contains_its_files(tmp_path: Path):
    real = tmp_path / "real-ws"
    real.mkdir()
    link = tmp_path / "ws-link"
    link.symlink_to(real, target_is_directory=True)
    assert resolve_inside(link, "a.txt") == real.resolve() / "a.txt"


@pytest.mark.parametrize("bad", ["", "   ", "a\0b"])
def test_empty_or_nul_paths_are_argument_errors(workspace: Path, bad: str):
    with pytest.raises(ToolArgumentError):
        resolve_inside(workspace, bad)


def _escapes(workspace: Path, outside: Path) -> dict[str, str]:
    """Path arguments that each lead outside in a different way."""
    (workspace / "link-file").symlink_to(outside / "secret.txt")
    (workspace / "link-dir").symlink_to(outside, target_is_directory=True)
    (workspace / "link-new").symlink_to(outside / "created-by-the-agent.txt")
    return {
        "absolute": str(outside / "secret.txt"),
        "dotdot": "../outside/secret.txt",
        "symlinked file": "link-file",
        "symlinked folder": "link-dir/secret.txt",
        "dangling link": "link-new",
    }


ESCAPE_KINDS = ["absolute", "dotdot", "symlinked file", "symlinked folder", "dangling link"]


def _calls(path: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("read_file", {"path": path}),
        ("list_directory", {"path": path}),
        ("search_files", {"pattern": "secret", "path": path}),
        ("write_file", {"path": path, "content": "pwned\n"}),
        ("edit_file", {"path": path, "old": "the secret", "new": "pwned"}),
    ]


@pytest.mark.parametrize("kind", ESCAPE_KINDS)
async def test_no_file_tool_reads_or_writes_outside_the_workspace(
    workspace: Path, outside: Path, make_ctx, registry, kind: str
):
    path = _escapes(workspace, outside)[kind]
    ctx = make_ctx()
    for name, args in _calls(path):
        outcome = await registry.call(name, json.dumps(args), ctx, call_id="c1")
        assert outcome.is_error, (name, outcome.content)
        assert "outside the workspace" in outcome.content, (name, outcome.content)
        assert "the secret" not in outcome.content
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "the secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    # Nothing was even put to the user: the refusal comes before approval.
    assert ctx.approver.asked == []


async def test_search_does_not_follow_a_symlink_out_while_walking(
    workspace: Path, outside: Path, make_ctx, registry
):
    (workspace / "src").mkdir()
    (workspace / "src" / "mine.txt").write_text("my secret is safe\n", encoding="utf-8")
    (workspace / "src" / "theirs.txt").symlink_to(outside / "secret.txt")
    (workspace / "src" / "linked").symlink_to(outside, target_is_directory=True)
    outcome = await registry.call("search_files", {"pattern": "secret"}, make_ctx())
    assert "src/mine.txt:1: my secret is safe" in outcome.content
    assert "the secret" not in outcome.content
    assert "1 linked outside the workspace" in outcome.content


async def test_listing_marks_a_link_that_leads_outside(
    workspace: Path, outside: Path, make_ctx, registry
):
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    outcome = await registry.call("list_directory", {}, make_ctx())
    assert f"out -> {outside} (outside the workspace)" in outcome.content
