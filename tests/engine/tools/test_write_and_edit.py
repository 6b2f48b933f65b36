"""write_file and edit_file: nothing changes without an allow, and what is approved is what
is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.tools import ConversationApprover, Decision, DenyAll, ToolContext

from .conftest import ScriptedApprover

pytestmark = pytest.mark.anyio


async def test_a_new_file_is_created_after_approval_showing_its_whole_content(
    registry, make_ctx, workspace: Path
):
    approver = ScriptedApprover(Decision.ALLOW_ONCE)
    ctx = make_ctx(approver=approver)
    args = {"path": "pkg/new.py", "content": "x = 1\ny = 2\n"}
    outcome = await registry.call("write_file", args, ctx)
    assert not outcome.is_error, outcome.content
    assert outcome.content == "Wrote pkg/new.py (created): 12 B, 2 lines."
    assert (workspace / "pkg" / "new.py").read_text(encoding="utf-8") == "x = 1\ny = 2\n"
    [request] = approver.asked
    assert request.tool == "write_file"
    assert request.summary == "Create pkg/new.py"
    assert request.detail.endswith("x = 1\ny = 2\n")


async def test_replacing_a_file_shows_a_diff_against_what_is_on_disk(
    registry, make_ctx, workspace: Path
):
    (workspace / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.ALLOW_ONCE)
    ctx = make_ctx(approver=approver)
    await registry.call("write_file", {"path": "a.txt", "content": "one\n2\nthree\n"}, ctx)
    [request] = approver.asked
    assert "--- a/a.txt\n+++ b/a.txt\n" in request.detail
    assert "-two\n+2\n" in request.detail
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "one\n2\nthree\n"


async def test_a_denied_write_changes_nothing_and_says_the_user_denied_it(
    registry, make_ctx, workspace: Path
):
    (workspace / "a.txt").write_text("keep me\n", encoding="utf-8")
    ctx = make_ctx(approver=ScriptedApprover(Decision.DENY))
    outcome = await registry.call("write_file", {"path": "a.txt", "content": "gone\n"}, ctx)
    assert outcome.is_error and outcome.denied
    assert "denied by the user" in outcome.content
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "keep me\n"
    new = await registry.call("write_file", {"path": "b.txt", "content": "x"}, ctx)
    assert new.denied and not (workspace / "b.txt").exists()


async def test_the_default_context_denies_every_change(registry, workspace: Path):
    ctx = ToolContext(workspace=workspace)
    assert isinstance(ctx.approver, DenyAll)
    outcome = await registry.call("write_file", {"path": "a.txt", "content": "x"}, ctx)
    assert outcome.denied and not (workspace / "a.txt").exists()


async def test_an_approver_that_crashes_counts_as_a_deny(registry, make_ctx, workspace: Path):
    class Broken:
        async def approve(self, request):
            raise RuntimeError("dialog closed")

    outcome = await registry.call(
        "write_file", {"path": "a.txt", "content": "x"}, make_ctx(approver=Broken())
    )
    assert outcome.denied and "asking for approval failed" in outcome.content
    assert not (workspace / "a.txt").exists()


async def test_always_for_this_conversation_covers_later_writes_and_edits(
    registry, make_ctx, workspace: Path
):
    inner = ScriptedApprover(Decision.ALLOW_ALWAYS)
    ctx = make_ctx(approver=ConversationApprover(inner))
    await registry.call("write_file", {"path": "a.txt", "content": "one\n"}, ctx)
    inner.answer = Decision.DENY  # would deny, if it were asked again
    second = await registry.call("write_file", {"path": "b.txt", "content": "two\n"}, ctx)
    edit = await registry.call("edit_file", {"path": "a.txt", "old": "one", "new": "uno"}, ctx)
    assert not second.is_error and not edit.is_error
    assert len(inner.asked) == 1
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "uno\n"
    # A new conversation asks again.
    fresh = make_ctx(approver=ConversationApprover(inner))
    third = await registry.call("write_file", {"path": "c.txt", "content": "3"}, fresh)
    assert third.denied


async def test_allow_once_is_not_remembered(registry, make_ctx):
    inner = ScriptedApprover(Decision.ALLOW_ONCE)
    ctx = make_ctx(approver=ConversationApprover(inner))
    await registry.call("write_file", {"path": "a.txt", "content": "1"}, ctx)
    await registry.call("write_file", {"path": "b.txt", "content": "2"}, ctx)
    assert len(inner.asked) == 2


async def test_writing_identical_content_asks_nobody(registry, make_ctx, workspace: Path):
    (workspace / "same.txt").write_text("same\n", encoding="utf-8")
    approver = ScriptedApprover()
    outcome = await registry.call(
        "write_file", {"path": "same.txt", "content": "same\n"}, make_ctx(approver=approver)
    )
    assert "nothing was written" in outcome.content and approver.asked == []


async def test_a_write_keeps_the_files_permissions(registry, make_ctx, workspace: Path):
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    args = {"path": "run.sh", "content": "#!/bin/sh\necho\n"}
    await registry.call("write_file", args, make_ctx())
    assert script.stat().st_mode & 0o777 == 0o755


async def test_a_write_through_a_symlink_inside_updates_its_target(
    registry, make_ctx, workspace: Path
):
    (workspace / "real.txt").write_text("old\n", encoding="utf-8")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    await registry.call("write_file", {"path": "alias.txt", "content": "new\n"}, make_ctx())
    assert (workspace / "real.txt").read_text(encoding="utf-8") == "new\n"
    assert (workspace / "alias.txt").is_symlink()


async def test_a_write_through_a_symlink_out_is_refused_and_the_target_untouched(
    registry, make_ctx, workspace: Path, outside: Path
):
    (workspace / "config").symlink_to(outside / "secret.txt")
    (workspace / "sub").symlink_to(outside, target_is_directory=True)
    for path in ["config", "sub/secret.txt", "sub/new.txt"]:
        outcome = await registry.call("write_file", {"path": path, "content": "pwned"}, make_ctx())
        assert "outside the workspace" in outcome.content
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "the secret\n"
    assert not (outside / "new.txt").exists()


async def test_a_file_changed_while_waiting_for_approval_is_not_overwritten(
    registry, make_ctx, workspace: Path
):
    target = workspace / "a.txt"
    target.write_text("v1\n", encoding="utf-8")

    class MeanwhileSomeoneSaves:
        async def approve(self, request):
            with open(target, "a", encoding="utf-8") as handle:
                handle.write("saved in the editor\n")
            return Decision.ALLOW_ONCE

    ctx = make_ctx(approver=MeanwhileSomeoneSaves())
    outcome = await registry.call("write_file", {"path": "a.txt", "content": "v3\n"}, ctx)
    assert outcome.is_error and "changed while waiting for approval" in outcome.content
    assert target.read_text(encoding="utf-8") == "v1\nsaved in the editor\n"
    edit = await registry.call("edit_file", {"path": "a.txt", "old": "v1", "new": "v4"}, ctx)
    assert edit.is_error and "changed while waiting" in edit.content
    assert target.read_text(encoding="utf-8") == "v1\nsaved in the editor\nsaved in the editor\n"


async def test_an_edit_replaces_the_one_match_and_shows_the_diff_for_approval(
    registry, make_ctx, workspace: Path
):
    (workspace / "app.py").write_text(
        "def f():\n    return 1\n\ndef g():\n    return 2\n", encoding="utf-8"
    )
    approver = ScriptedApprover()
    outcome = await registry.call(
        "edit_file",
        {"path": "app.py", "old": "    return 2\n", "new": "    return 3\n"},
        make_ctx(approver=approver),
    )
    assert not outcome.is_error, outcome.content
    assert (workspace / "app.py").read_text(encoding="utf-8").endswith("def g():\n    return 3\n")
    [request] = approver.asked
    assert request.summary == "Edit app.py"
    assert "-    return 2\n+    return 3" in request.detail
    assert "     5\t    return 3" in outcome.content


async def test_an_edit_whose_text_is_missing_or_ambiguous_fails_before_asking(
    registry, make_ctx, workspace: Path
):
    (workspace / "a.txt").write_text("x = 1\nx = 1\n", encoding="utf-8")
    approver = ScriptedApprover()
    ctx = make_ctx(approver=approver)
    missing = await registry.call("edit_file", {"path": "a.txt", "old": "y", "new": "z"}, ctx)
    assert missing.is_error and "was not found" in missing.content
    twice = await registry.call("edit_file", {"path": "a.txt", "old": "x = 1", "new": "x"}, ctx)
    assert twice.is_error and "occurs 2 times" in twice.content
    same = await registry.call("edit_file", {"path": "a.txt", "old": "x", "new": "x"}, ctx)
    assert same.is_error and "nothing to change" in same.content
    gone = await registry.call("edit_file", {"path": "b.txt", "old": "x", "new": "y"}, ctx)
    assert gone.is_error and "no such file" in gone.content
    assert approver.asked == []


async def test_an_edit_matches_lines_of_a_crlf_file_and_keeps_its_line_endings(
    registry, make_ctx, workspace: Path
):
    (workspace / "win.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    outcome = await registry.call(
        "edit_file", {"path": "win.txt", "old": "alpha\nbeta", "new": "alpha\nBETA"}, make_ctx()
    )
    assert not outcome.is_error, outcome.content
    assert (workspace / "win.txt").read_bytes() == b"alpha\r\nBETA\r\ngamma\r\n"


async def test_an_edit_of_a_file_that_is_not_utf8_is_refused(registry, make_ctx, workspace: Path):
    (workspace / "l1.txt").write_bytes("café\n".encode("latin-1"))
    outcome = await registry.call(
        "edit_file", {"path": "l1.txt", "old": "caf", "new": "tea"}, make_ctx()
    )
    assert outcome.is_error and "not valid UTF-8" in outcome.content
    assert (workspace / "l1.txt").read_bytes() == "café\n".encode("latin-1")


async def test_old_string_and_new_string_are_understood_as_old_and_new(
    registry, make_ctx, workspace: Path
):
    (workspace / "a.txt").write_text("hello\n", encoding="utf-8")
    args = '{"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}'
    outcome = await registry.call("edit_file", args, make_ctx())
    assert not outcome.is_error, outcome.content
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "bye\n"


async def test_writing_onto_a_folder_or_under_a_file_fails_clearly(
    registry, make_ctx, workspace: Path
):
    (workspace / "dir").mkdir()
    (workspace / "file.txt").write_text("x", encoding="utf-8")
    onto = await registry.call("write_file", {"path": "dir", "content": "x"}, make_ctx())
    assert onto.is_error and "is a folder" in onto.content
    under = await registry.call("write_file", {"path": "file.txt/x", "content": "x"}, make_ctx())
    assert under.is_error
    assert sorted(os.listdir(workspace)) == ["dir", "file.txt"]
