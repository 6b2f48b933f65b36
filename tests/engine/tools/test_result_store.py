"""ToolResultStore: whole results kept for retrieve_tool_result, never a dependency."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.tools import ResultNotStored, ToolArgumentError, ToolResultStore


def test_a_stored_result_reads_back_whole_and_in_pages(tmp_path: Path):
    store = ToolResultStore(tmp_path / "tool-results")
    assert store.store("call_1", "abcdefghij")
    assert (tmp_path / "tool-results" / "call_1.txt").read_text(encoding="utf-8") == "abcdefghij"
    page = store.read("call_1", offset=3, limit=4)
    assert (page.text, page.offset, page.total, page.next_offset) == ("defg", 3, 10, 7)
    last = store.read("call_1", offset=7, limit=100)
    assert last.text == "hij" and last.next_offset is None


def test_storing_again_replaces_the_result(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    store.store("c", "first")
    store.store("c", "second")
    assert store.read("c").text == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["c.txt"]  # no temporary files left


def test_a_missing_result_is_reported_as_not_stored(tmp_path: Path):
    with pytest.raises(ResultNotStored):
        ToolResultStore(tmp_path).read("never")
    with pytest.raises(ResultNotStored):
        ToolResultStore(tmp_path / "no-such-folder").read("never")


def test_an_id_that_tries_to_climb_out_names_a_file_inside_the_store(tmp_path: Path):
    folder = tmp_path / "store"
    store = ToolResultStore(folder)
    (tmp_path / "victim.txt").write_text("keep", encoding="utf-8")
    assert store.store("../victim", "overwritten?")
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "keep"
    assert store.path_for("../victim").parent == folder
    assert store.read("../victim").text == "overwritten?"
    assert store.path_for("/etc/passwd").parent == folder


def test_ids_with_unusual_characters_round_trip_and_stay_distinct(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    store.store("functions.read_file:0", "zero")
    store.store("functions.read_file:1", "one")
    assert store.read("functions.read_file:0").text == "zero"
    assert store.read("functions.read_file:1").text == "one"


@pytest.mark.parametrize("bad", ["", "  ", "a\nb", "x" * 300])
def test_ids_no_engine_would_send_are_refused(tmp_path: Path, bad: str):
    store = ToolResultStore(tmp_path)
    assert store.store(bad, "text") is False
    with pytest.raises(ToolArgumentError):
        store.read(bad)


def test_a_store_whose_folder_cannot_exist_returns_false_instead_of_raising(tmp_path: Path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's parent should be", encoding="utf-8")
    store = ToolResultStore(blocker / "tool-results")
    assert store.store("call_1", "text") is False
    assert store.has("call_1") is False


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root ignores permissions; the file-as-parent test covers an unwritable store",
)
def test_a_read_only_store_returns_false_instead_of_raising(tmp_path: Path):
    folder = tmp_path / "tool-results"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert ToolResultStore(folder).store("call_1", "text") is False
    finally:
        folder.chmod(0o700)
