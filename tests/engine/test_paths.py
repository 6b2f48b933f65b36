"""Where Brim's files live, and the one override that moves them all."""

from pathlib import Path

import platformdirs
import pytest

from engine.paths import BrimPaths, safe_component

PATH_FIELDS = (
    "config_dir",
    "agents_dir",
    "settings_path",
    "data_dir",
    "db_path",
    "work_dir",
    "memory_dir",
    "logs_dir",
    "cache_dir",
)


def test_the_data_dir_argument_moves_every_path_under_it(tmp_path):
    paths = BrimPaths.resolve(tmp_path / "home", env={})
    for name in PATH_FIELDS:
        assert getattr(paths, name).is_relative_to(tmp_path / "home"), name
    assert paths.overridden


def test_brim_home_moves_every_path_when_no_argument_is_given(tmp_path):
    paths = BrimPaths.resolve(env={"BRIM_HOME": str(tmp_path)})
    assert paths.root == tmp_path.resolve()
    for name in PATH_FIELDS:
        assert getattr(paths, name).is_relative_to(tmp_path), name


def test_the_argument_wins_over_brim_home(tmp_path):
    paths = BrimPaths.resolve(tmp_path / "arg", env={"BRIM_HOME": str(tmp_path / "env")})
    assert paths.db_path.is_relative_to(tmp_path / "arg")


def test_the_process_environment_is_read_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("BRIM_HOME", str(tmp_path))
    assert BrimPaths.resolve().agents_dir.is_relative_to(tmp_path)


def test_without_an_override_paths_follow_the_platform_folders():
    paths = BrimPaths.resolve(env={"BRIM_HOME": ""})
    assert not paths.overridden
    assert paths.agents_dir.is_relative_to(platformdirs.user_config_path("brim"))
    assert paths.db_path.is_relative_to(platformdirs.user_data_path("brim"))
    assert paths.db_path.name == "brim.sqlite3"


def test_a_relative_or_tilde_override_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert BrimPaths.resolve("rel", env={}).root == tmp_path.resolve() / "rel"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert BrimPaths.resolve("~/b", env={}).root == tmp_path.resolve() / "b"


def test_resolving_creates_nothing_and_ensure_creates_the_folders(tmp_path):
    paths = BrimPaths.resolve(tmp_path / "home", env={})
    assert not (tmp_path / "home").exists()
    assert paths.ensure() is paths
    for name in ("agents_dir", "work_dir", "memory_dir", "logs_dir", "cache_dir"):
        assert getattr(paths, name).is_dir(), name
    assert not paths.db_path.exists()
    assert not paths.settings_path.exists()


def test_a_conversation_work_folder_sits_under_its_agent(tmp_path):
    paths = BrimPaths.resolve(tmp_path, env={})
    folder = paths.conversation_dir("coder", "abc123")
    assert folder == paths.work_dir / "coder" / "abc123"
    assert paths.tool_results_dir("coder", "abc123") == folder / "tool-results"


@pytest.mark.parametrize("name", ["../../etc", "a/b", "..", "", "Coder (Qwen) ✓", "x\\y"])
def test_an_unusual_agent_name_stays_one_folder_inside_the_work_dir(tmp_path, name):
    paths = BrimPaths.resolve(tmp_path, env={})
    folder = paths.conversation_dir(name, "c1")
    assert folder.parent.parent == paths.work_dir
    assert folder.resolve().is_relative_to(paths.work_dir.resolve())


def test_names_that_sanitize_alike_get_distinct_folders():
    assert safe_component("a/b") != safe_component("a_b")
    assert safe_component("a b") != safe_component("a?b")
    assert safe_component("plain-name_1.0") == "plain-name_1.0"


def test_paths_are_frozen(tmp_path):
    paths = BrimPaths.resolve(tmp_path, env={})
    with pytest.raises(AttributeError):
        paths.root = Path("/")  # type: ignore[misc]
