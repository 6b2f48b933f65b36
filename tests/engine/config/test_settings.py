"""App settings are remembered between runs and never block a start."""

import subprocess
import sys

from engine.config.settings import load_settings, update_settings


def test_settings_saved_are_loaded_back(tmp_path):
    path = tmp_path / "config" / "settings.json"
    update_settings(path, last_conversation="abc", geometry=[10, 20, 800, 600])
    assert load_settings(path) == {"last_conversation": "abc", "geometry": [10, 20, 800, 600]}


def test_none_removes_a_setting_and_other_keys_stay(tmp_path):
    path = tmp_path / "settings.json"
    update_settings(path, a=1, b=2)
    assert update_settings(path, a=None) == {"b": 2}
    assert load_settings(path) == {"b": 2}


def test_a_missing_or_damaged_settings_file_reads_as_empty(tmp_path):
    path = tmp_path / "settings.json"
    assert load_settings(path) == {}
    path.write_text("{not json")
    assert load_settings(path) == {}
    path.write_text("[1, 2]")
    assert load_settings(path) == {}
    assert update_settings(path, ok=True) == {"ok": True}


def test_two_processes_updating_different_keys_keep_both(tmp_path):
    path = tmp_path / "settings.json"
    code = (
        "import sys\n"
        "from engine.config.settings import update_settings\n"
        "for i in range(30):\n"
        "    update_settings(sys.argv[1], **{sys.argv[2] + str(i): i})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), k]) for k in "ab"]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert len(load_settings(path)) == 60
