"""New, duplicate, delete and restore of agent files, on a real agents folder."""

from __future__ import annotations

from pathlib import Path

from engine.config import load_agent, load_agents
from engine.config.agent_admin import (
    create_agent,
    duplicate_agent,
    is_agent_file_change,
    restore_agent,
    trash_agent,
    unused_name,
)
from engine.paths import BrimPaths


def _paths(tmp_path: Path) -> BrimPaths:
    return BrimPaths.under(tmp_path).ensure()


def test_a_new_agent_takes_a_name_no_agent_has_and_the_open_agents_engine(tmp_path):
    paths = _paths(tmp_path)
    first = create_agent(paths)
    like = first.with_changes(provider="ollama", base_url="http://127.0.0.1:1", model="m:1b")
    second = create_agent(paths, like)
    assert (first.name, second.name) == ("New agent", "New agent 2")
    assert (second.provider, second.base_url, second.model) == (
        "ollama",
        "http://127.0.0.1:1",
        "m:1b",
    )
    assert "# Brim agent: New agent 2" in second.source_path.read_text(encoding="utf-8")


def test_a_copy_keeps_the_files_comments_and_only_changes_the_name(tmp_path):
    paths = _paths(tmp_path)
    source = paths.agents_dir / "coder.toml"
    source.write_text('# mine\nname = "coder"\ntemperature = 0.3  # low\n', encoding="utf-8")
    copy = duplicate_agent(paths, load_agent(source))
    text = copy.source_path.read_text(encoding="utf-8")
    assert copy.name == "coder copy" and copy.temperature == 0.3
    assert text.startswith("# mine\n") and "# low" in text
    assert duplicate_agent(paths, load_agent(source)).name == "coder copy 2"


def test_a_trashed_agent_is_not_loaded_and_comes_back_byte_for_byte(tmp_path):
    paths = _paths(tmp_path)
    source = paths.agents_dir / "coder.toml"
    source.write_text('name = "coder"  # keep me\n', encoding="utf-8")
    trashed = trash_agent(paths, source, "coder")
    assert not source.exists()
    assert load_agents(paths.agents_dir) == ([], [])
    assert restore_agent(paths, trashed) == source
    assert source.read_text(encoding="utf-8") == 'name = "coder"  # keep me\n'


def test_a_restore_onto_a_taken_file_name_lands_beside_it(tmp_path):
    paths = _paths(tmp_path)
    source = paths.agents_dir / "coder.toml"
    source.write_text('name = "coder"\n', encoding="utf-8")
    trashed = trash_agent(paths, source)
    source.write_text('name = "other"\n', encoding="utf-8")
    back = restore_agent(paths, trashed)
    assert back != source and back.parent == paths.agents_dir
    assert source.read_text(encoding="utf-8") == 'name = "other"\n'


def test_names_and_watched_files():
    assert unused_name("a", ["A", "a 2"]) == "a 3"
    assert is_agent_file_change("coder.toml")
    assert not is_agent_file_change(".coder.toml.lock")
    assert not is_agent_file_change(".trash/coder.20260101.toml")
    assert not is_agent_file_change("coder.toml.tmp")
