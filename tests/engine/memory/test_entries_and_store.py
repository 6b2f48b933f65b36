"""Memory files: one Markdown file per subject, readable by hand, skipped when linked."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engine.memory import MemoryService, parse_entry, render_entry
from engine.memory.errors import BadSubject
from engine.memory.layout import subject_slug
from tests.engine.memory.conftest import tree_digest


def test_an_entry_renders_and_parses_back_with_its_quote_keys_and_origin():
    text = render_entry(
        kind="fact",
        origin="auto",
        statement="The user prefers tabs.",
        quotes=("I always want tabs,\nnever spaces.",),
        keys=("aa11", "bb22"),
        source="conversation c message m",
        suggestion="s-1",
    )
    fields = parse_entry(text)
    assert fields.kind == "fact" and fields.origin == "auto"
    assert fields.keys == ("aa11", "bb22")
    assert fields.quotes == ("I always want tabs,\nnever spaces.",)
    assert fields.statement == "The user prefers tabs."
    assert fields.suggestion == "s-1"


def test_a_file_written_by_hand_is_a_note_in_the_users_own_words(service: MemoryService):
    scope = service.layout.global_scope()
    scope.folder.mkdir(parents=True)
    (scope.folder / "editor.md").write_text("# Editor\nI use Helix now.\n", encoding="utf-8")
    (entry,) = service.store.read_scope(scope)
    assert entry.kind == "note" and entry.fields.origin == "user"
    assert entry.first_line == "Editor"
    assert entry.canonical == "global/editor.md"


def test_subjects_are_file_names_and_session_words_are_refused():
    assert subject_slug("Package Manager") == "package-manager"
    assert subject_slug("editor.md") == "editor"
    for bad in ("", "???", "todo", "session", "x" * 61):
        with pytest.raises(BadSubject):
            subject_slug(bad)


def test_a_linked_scope_and_a_linked_file_are_skipped(
    service: MemoryService, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret-plans.md").write_text("outside text\n", encoding="utf-8")
    root = service.root
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "default").symlink_to(outside, target_is_directory=True)
    glob = service.layout.global_scope().folder
    glob.mkdir(parents=True)
    (glob / "linked.md").symlink_to(outside / "secret-plans.md")
    (glob / "real.md").write_text("A real note.\n", encoding="utf-8")
    scopes = service.scopes("default", None)
    with caplog.at_level(logging.WARNING):
        snapshot = service.store.snapshot(scopes, assign_ids=True)
    assert [e.canonical for e in snapshot.entries] == ["global/real.md"]
    assert snapshot.skipped == ("agents/default",)
    assert "symbolic link" in caplog.text


def test_an_unreadable_scope_is_logged_and_skipped_and_the_others_still_load(
    service: MemoryService, caplog: pytest.LogCaptureFixture
):
    glob = service.layout.global_scope().folder
    glob.mkdir(parents=True)
    (glob / "tone.md").write_text("Plain words.\n", encoding="utf-8")
    agent = service.layout.agent_scope("default").folder
    agent.parent.mkdir(parents=True)
    agent.write_text("a file where a folder should be", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        snapshot = service.store.snapshot(service.scopes("default", None), assign_ids=False)
    assert [e.canonical for e in snapshot.entries] == ["global/tone.md"]
    assert snapshot.skipped == ("agents/default",)
    assert "could not be read" in caplog.text


def test_ids_are_assigned_on_first_snapshot_and_kept_after(service: MemoryService):
    glob = service.layout.global_scope().folder
    glob.mkdir(parents=True)
    (glob / "tone.md").write_text("Plain words.\n", encoding="utf-8")
    first = service.store.snapshot(service.scopes(None, None), assign_ids=True)
    (glob / "tone.md").write_text("Plainer words.\n", encoding="utf-8")
    second = service.store.snapshot(service.scopes(None, None), assign_ids=True)
    assert first.entries[0].id and first.entries[0].id == second.entries[0].id
    assert first.entries[0].hash != second.entries[0].hash


def test_a_read_only_snapshot_writes_nothing(service: MemoryService):
    glob = service.layout.global_scope().folder
    glob.mkdir(parents=True)
    (glob / "tone.md").write_text("Plain words.\n", encoding="utf-8")
    before = tree_digest(service.root)
    snapshot = service.store.snapshot(service.scopes("a", Path("/tmp")), assign_ids=False)
    assert snapshot.entries[0].id == ""
    assert tree_digest(service.root) == before


def test_project_scopes_are_kept_apart_per_workspace(service: MemoryService, tmp_path: Path):
    a, b = tmp_path / "a" / "app", tmp_path / "b" / "app"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    ka = service.layout.project_scope(a).key
    kb = service.layout.project_scope(b).key
    assert ka != kb and ka.startswith("projects/app-") and kb.startswith("projects/app-")
