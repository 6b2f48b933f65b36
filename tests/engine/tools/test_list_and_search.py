"""list_directory and search_files: sorted, typed, bounded, and honest about what they skip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.tools import ToolError, list_tool, search_tool
from engine.tools.list_tool import list_folder
from engine.tools.search_tool import search

pytestmark = pytest.mark.anyio


def test_a_listing_shows_folders_first_then_files_with_sizes(workspace: Path):
    (workspace / "src").mkdir()
    (workspace / "README.md").write_text("x" * 1500, encoding="utf-8")
    (workspace / "a.txt").write_text("hi", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / "readme-link").symlink_to(workspace / "README.md")
    lines = list_folder(workspace, ".").splitlines()
    assert lines[0] == "Folder: . (5 entries)"
    assert [line.split()[0] for line in lines[1:]] == ["dir", "dir", "file", "link", "file"]
    assert lines[1].endswith(" .git/") and lines[2].endswith(" src/")
    assert "2 B" in lines[3] and lines[3].endswith(" a.txt")
    assert lines[4].endswith(f"readme-link -> {workspace / 'README.md'}")
    assert "1.5 KB" in lines[5] and lines[5].endswith(" README.md")


def test_the_same_folder_lists_identically_every_time(workspace: Path):
    for name in ["b", "A", "c", "a"]:
        (workspace / name).write_text(name, encoding="utf-8")
    assert list_folder(workspace) == list_folder(workspace)


def test_a_huge_folder_is_cut_with_a_count_of_the_rest(workspace: Path, monkeypatch):
    monkeypatch.setattr(list_tool, "MAX_ENTRIES", 10)
    for i in range(25):
        (workspace / f"f{i:02}.txt").write_text("x", encoding="utf-8")
    lines = list_folder(workspace).splitlines()
    assert lines[0] == "Folder: . (25 entries)"
    assert len(lines) == 12
    assert lines[-1].startswith("[… and 15 more entries not shown")


def test_listing_an_empty_folder_a_file_and_a_missing_folder(workspace: Path):
    (workspace / "empty").mkdir()
    (workspace / "f.txt").write_text("x", encoding="utf-8")
    assert list_folder(workspace, "empty") == "Folder: empty (empty)"
    with pytest.raises(ToolError, match=re.escape("f.txt is a file, not a folder; use read_file")):
        list_folder(workspace, "f.txt")
    with pytest.raises(ToolError, match=re.escape("nothere: no such folder")):
        list_folder(workspace, "nothere")


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(
        "import os\n\ndef main():\n    return os.getcwd()\n", encoding="utf-8"
    )
    (workspace / "src" / "util.ts").write_text("export const main = 1;\n", encoding="utf-8")
    (workspace / "notes.md").write_text("Main ideas\n", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("main = yes\n", encoding="utf-8")
    (workspace / "node_modules").mkdir()
    (workspace / "node_modules" / "dep.js").write_text("main()\n", encoding="utf-8")
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00main\x00")
    return workspace


def test_a_regex_search_returns_path_line_and_text(project: Path):
    text = search(project, r"def \w+\(")
    assert text.splitlines() == [
        "1 match for 'def \\\\w+\\\\(' in 1 file under .:",
        "src/app.py:3: def main():",
        "[Skipped files: 1 binary.]",
    ]


def test_search_skips_git_dependency_folders_and_binary_files(project: Path):
    text = search(project, "main")
    assert "src/app.py:3: def main():" in text
    assert "src/util.ts:1: export const main = 1;" in text
    assert ".git" not in text.split("[")[0] and "node_modules" not in text.split("[")[0]
    assert "[Skipped files: 1 binary.]" in text


def test_a_skipped_folder_can_still_be_searched_by_naming_it(project: Path):
    assert "node_modules/dep.js:1: main()" in search(project, "main", path="node_modules")


def test_glob_ignore_case_and_literal_narrow_the_search(project: Path):
    assert "src/util.ts" not in search(project, "main", glob="*.py")
    assert "src/app.py" in search(project, "main", glob="src/*.py")
    assert "notes.md:1: Main ideas" in search(project, "main", ignore_case=True)
    assert "notes.md" not in search(project, "main")
    (project / "re.txt").write_text("a+b (c)\n", encoding="utf-8")
    assert "re.txt:1: a+b (c)" in search(project, "a+b (c)", literal=True)


def test_no_matches_says_how_much_was_searched(project: Path):
    assert search(project, "zebra").startswith("No matches for 'zebra' in . (4 files searched)")


def test_an_invalid_regex_is_an_argument_error_that_suggests_literal(project: Path):
    with pytest.raises(ToolError, match=re.escape("literal=true")):
        search(project, "foo(")


def test_results_stop_at_the_match_limit_and_say_so(workspace: Path, monkeypatch):
    monkeypatch.setattr(search_tool, "MAX_MATCHES", 5)
    (workspace / "many.txt").write_text("hit\n" * 50, encoding="utf-8")
    lines = search(workspace, "hit").splitlines()
    assert len([line for line in lines if line.startswith("many.txt:")]) == 5
    assert lines[-1].startswith("[Search stopped at 5 matches; narrow")


def test_large_files_are_skipped_and_counted(workspace: Path, monkeypatch):
    monkeypatch.setattr(search_tool, "MAX_FILE_BYTES", 100)
    (workspace / "big.txt").write_text("needle\n" * 100, encoding="utf-8")
    (workspace / "small.txt").write_text("needle\n", encoding="utf-8")
    text = search(workspace, "needle")
    assert "small.txt:1: needle" in text and "big.txt" not in text.split("[")[0]
    assert "1 over" in text


def test_long_matching_lines_are_shortened(workspace: Path):
    (workspace / "min.js").write_text("x" * 10_000 + "needle" + "\n", encoding="utf-8")
    line = search(workspace, "needle", literal=True).splitlines()[1]
    assert len(line) < 400 and line.endswith(" …")


async def test_search_through_the_registry_accepts_a_missing_path(
    project: Path, registry, make_ctx
):
    outcome = await registry.call("search_files", '{"pattern": "getcwd"}', make_ctx())
    assert not outcome.is_error
    assert "src/app.py:4:     return os.getcwd()" in outcome.content
