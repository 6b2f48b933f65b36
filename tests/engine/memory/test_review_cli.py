"""`brim memory review` and friends, run as the real command with piped input."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli.review import run_review
from engine.memory import MemoryService
from engine.memory.review import parse_selection
from engine.paths import BrimPaths
from tests.engine.memory.helpers import queue_facts, sentences
from tests.helpers.cli import run_brim


def _home_with(tmp_path: Path, n: int) -> tuple[Path, MemoryService, list[str]]:
    home = tmp_path / "home"
    service = MemoryService.for_paths(BrimPaths.under(home))
    ids = [s.id for s in queue_facts(service, sentences(n))]
    return home, service, ids


def test_checked_items_are_accepted_and_the_rest_of_the_page_rejected(tmp_path: Path):
    home, service, ids = _home_with(tmp_path, 3)
    run = run_brim(["memory", "review"], data_dir=home, stdin="1 3\n")
    assert run.returncode == 0, run.stderr
    assert "page 1 of 1" in run.stdout
    written = {e.fields.suggestion for e in service.store.read_scope(service.layout.global_scope())}
    assert written == {ids[0], ids[2]}
    assert service.pending() == []


def test_escape_leaves_that_page_and_every_later_one_waiting(tmp_path: Path):
    home, service, ids = _home_with(tmp_path, 20)
    run = run_brim(["memory", "review", "--page-size", "8"], data_dir=home, stdin="all\n\x1b\n")
    assert run.returncode == 0, run.stderr
    assert "page 1 of 3" in run.stdout and "page 2 of 3" in run.stdout
    assert "page 3 of 3" not in run.stdout
    assert [s.id for s in service.pending()] == ids[8:]
    assert "Left 12 suggestions waiting." in run.stdout


def test_the_end_of_input_is_an_escape_not_a_rejection(tmp_path: Path):
    home, service, ids = _home_with(tmp_path, 3)
    run = run_brim(["memory", "review"], data_dir=home, stdin="")
    assert run.returncode == 0
    assert [s.id for s in service.pending()] == ids


def test_a_bad_answer_asks_again_and_nothing_is_decided_on_it(tmp_path: Path):
    home, service, ids = _home_with(tmp_path, 2)
    run = run_brim(["memory", "review"], data_dir=home, stdin="7\nyes please\n2\n")
    assert run.stdout.count("Not a selection") == 2
    written = {e.fields.suggestion for e in service.store.read_scope(service.layout.global_scope())}
    assert written == {ids[1]} and service.pending() == []


def test_an_accept_that_fails_is_shown_and_stays_queued(service: MemoryService):
    (s,) = queue_facts(service, sentences(1))
    folder = service.layout.global_scope().folder
    folder.mkdir(parents=True)
    (folder / "fact-0.md").write_text("Written by hand meanwhile.\n", encoding="utf-8")
    shown: list[str] = []
    result = run_review(service, read_line=lambda prompt: "1", write=shown.append)
    assert result.failed and result.failed[0][0] == s.id
    assert any("stays queued" in line for line in shown)
    assert [p.id for p in service.pending()] == [s.id]


def test_selections_parse_numbers_ranges_all_and_none():
    assert parse_selection("1 3", 4) == [0, 2]
    assert parse_selection("2-4", 4) == [1, 2, 3]
    assert parse_selection("all", 2) == [0, 1]
    assert parse_selection("", 3) == [] and parse_selection("none", 3) == []
    assert parse_selection("5", 4) is None and parse_selection("x", 4) is None


def test_list_accept_reject_and_forget_from_the_command_line(tmp_path: Path):
    home, _, ids = _home_with(tmp_path, 3)
    listed = run_brim(["memory", "list"], data_dir=home)
    assert all(i in listed.stdout for i in ids)
    accepted = run_brim(["memory", "accept", ids[0], "s-nothere", "--json"], data_dir=home)
    assert accepted.returncode == 1
    assert [d["ok"] for d in json.loads(accepted.stdout)] == [True, False]
    rejected = run_brim(["memory", "reject", ids[1]], data_dir=home)
    assert rejected.returncode == 0 and f"rejected {ids[1]}" in rejected.stdout
    entries = run_brim(["memory", "list", "--entries", "--json"], data_dir=home)
    assert [e["path"] for e in json.loads(entries.stdout)] == ["global/fact-0.md"]
    forgot = run_brim(["memory", "forget", "global/fact-0.md"], data_dir=home)
    assert forgot.returncode == 0
    assert (
        json.loads(run_brim(["memory", "list", "--entries", "--json"], data_dir=home).stdout) == []
    )
    outside = run_brim(["memory", "forget", "../../etc/passwd.md"], data_dir=home)
    assert outside.returncode == 1
