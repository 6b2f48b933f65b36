import json

import pytest

from engine.context.errors import WorkStateError
from engine.context.work_state import (
    PREAMBLE_HEAD,
    Journal,
    WorkState,
    journal_preamble,
    render_work_state,
    work_folder_files,
)


def test_the_journal_appends_one_json_object_per_line(tmp_path):
    journal = Journal(tmp_path / "work" / "journal.jsonl")
    journal.append({"summary": "first"})
    journal.append({"summary": "second ✓"})
    lines = journal.path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["summary"] for line in lines] == ["first", "second ✓"]
    assert [e["summary"] for e in journal.read()] == ["first", "second ✓"]


def test_a_torn_last_line_is_skipped_on_read_and_never_fuses_with_the_next_record(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append({"summary": "whole"})
    with open(journal.path, "ab") as handle:
        handle.write(b'{"summary": "torn by a cra')
    assert [e["summary"] for e in journal.read()] == ["whole"]
    journal.append({"summary": "after the crash"})
    assert [e["summary"] for e in journal.read()] == ["whole", "after the crash"]


def test_the_journal_is_capped_and_pruned_oldest_first(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl", max_entries=3)
    for i in range(5):
        journal.append({"summary": f"s{i}"})
    assert [e["summary"] for e in journal.read()] == ["s2", "s3", "s4"]


def test_a_missing_journal_reads_as_empty(tmp_path):
    assert Journal(tmp_path / "nope.jsonl").read() == []


def test_work_state_is_patched_field_by_field(tmp_path):
    state = WorkState(tmp_path / "state.json")
    state.update({"goal": "migrate routes", "notes": {"auth": "fails on refresh", "db": "ok"}})
    state.update({"notes": {"auth": "fixed"}})
    assert state.read() == {"goal": "migrate routes", "notes": {"auth": "fixed", "db": "ok"}}
    state.update({"goal": None})
    assert "goal" not in state.read()
    assert list(tmp_path.iterdir()) == [tmp_path / "state.json"]


def test_todos_are_patched_by_id_and_carry_verified_by(tmp_path):
    state = WorkState(tmp_path / "state.json")
    state.update({"todos": [{"id": "1", "content": "route A"}, {"content": "route B"}]})
    state.update({"todos": [{"id": "1", "status": "completed", "verifiedBy": "pytest -q"}]})
    todos = state.read()["todos"]
    assert todos[0] == {
        "id": "1",
        "content": "route A",
        "status": "completed",
        "verifiedBy": "pytest -q",
    }
    assert todos[1]["id"] == "2" and todos[1]["status"] == "pending"
    assert todos[1]["verifiedBy"] == ""
    state.update({"todos": [{"id": "2", "delete": True}]})
    assert [t["id"] for t in state.read()["todos"]] == ["1"]


def test_an_unknown_todo_status_is_refused_and_nothing_is_written(tmp_path):
    state = WorkState(tmp_path / "state.json")
    state.update({"goal": "g"})
    with pytest.raises(WorkStateError):
        state.update({"todos": [{"id": "1", "status": "sort of done"}]})
    assert state.read() == {"goal": "g"}


def test_a_corrupt_state_file_is_reported_not_guessed(tmp_path):
    (tmp_path / "state.json").write_text("[1, 2", encoding="utf-8")
    with pytest.raises(WorkStateError):
        WorkState(tmp_path / "state.json").read()


def test_a_completed_todo_nobody_checked_says_so():
    text = render_work_state(
        {
            "goal": "ship",
            "todos": [
                {"content": "a", "status": "completed", "verifiedBy": ""},
                {"content": "b", "status": "completed", "verifiedBy": "ran the tests"},
            ],
        }
    )
    assert "- [completed] a (unverified)" in text
    assert "- [completed] b (verified by: ran the tests)" in text


def test_the_journal_preamble_is_bounded_framed_as_claims_and_prefers_the_newest(tmp_path):
    journal, _ = work_folder_files(tmp_path)
    for i in range(30):
        journal.append({"summary": f"record {i}: " + "x" * 1_000})
    preamble = journal_preamble(journal.read(), budget_tokens=2_000)
    assert preamble.startswith(PREAMBLE_HEAD) and "verify them" in preamble
    assert len(preamble) // 4 <= 2_000
    assert "record 29:" in preamble and "record 0:" not in preamble
    assert preamble.index("record 28:") < preamble.index("record 29:")


def test_a_single_huge_record_is_cut_to_the_preamble_budget():
    preamble = journal_preamble([{"summary": "y" * 50_000}], budget_tokens=500)
    assert (len(preamble) + 3) // 4 <= 500 and preamble.endswith("…")


def test_an_empty_journal_gives_no_preamble():
    assert journal_preamble([]) == ""
