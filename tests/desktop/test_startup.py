"""The app starts whatever state it finds, and says in the window what is wrong."""

from __future__ import annotations

import socket
from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_a_broken_agent_file_is_named_in_the_window_and_the_others_still_work(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(
            agents={
                "good.toml": agent_toml("good", fake.url),
                "broken.toml": 'name = "broken"\nprovider = "llamacpp"\nnum_ctx = "big"\n',
            }
        )
        banner = d.window.setup_banner
        assert banner.isVisible()
        assert banner.text().startswith("1 agent file could not be loaded")
        assert "broken.toml" in banner.text() and "num_ctx" in banner.text()
        tree = d.window.sidebar.tree
        names = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
        assert names == ["good", "⚠ broken.toml"]
        problem = tree.topLevelItem(1).child(0).text(0)
        assert "num_ctx" in problem
        _send(qtbot, d.window, "Still there?")
        qtbot.waitUntil(lambda: "Hello from the fake engine." in d.window.transcript.toPlainText())


def test_with_no_usable_agent_the_window_says_which_folder_to_fix(qtbot, real_desktop):
    d = real_desktop(agents={"broken.toml": "name = [\n"}, wait_open=False)
    qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=10000)
    assert d.window.banner.text().startswith("No usable agent — Every agent file in ")
    assert str(d.paths.agents_dir) in d.window.banner.text()
    assert d.window.header.state() == "not started"
    assert "not valid TOML" in d.window.setup_banner.text()


def test_an_unreachable_engine_shows_a_banner_with_retry(qtbot, real_desktop):
    url = f"http://127.0.0.1:{_closed_port()}"
    d = real_desktop(agents={"far.toml": agent_toml("far", url)})
    qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=10000)
    assert d.window.banner.text().startswith("Engine unreachable — ")
    assert url in d.window.banner.text()
    assert d.window.banner.retry_button.isVisible()
    d.window.banner.hide()
    qtbot.mouseClick(d.window.banner.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=10000)  # still unreachable
    assert "Traceback" not in d.window.banner.text()


def test_a_crashed_engine_keeps_the_conversation_and_retry_finishes_the_turn(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.script_reply("The first answer.")
        fake.script_reply("partial answer that never", fail="die", fail_after=2)
        fake.script_reply("The second answer, after the retry.")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _send(qtbot, d.window, "First question")
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        _send(qtbot, d.window, "Second question")
        qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=10000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        assert d.window.banner.retry_button.isVisible()
        text = d.window.transcript.toPlainText()
        assert "First question" in text and "The first answer." in text  # intact
        qtbot.mouseClick(d.window.banner.retry_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: "The second answer, after the retry." in d.window.transcript.toPlainText(),
            timeout=10000,
        )
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    users = [r.text for r in d.window.transcript.rows() if r.kind == "user"]
    assert users == ["First question", "Second question"]
    assert not d.window.banner.isVisible()


def test_an_empty_data_folder_starts_the_default_agent_and_says_so(qtbot, real_desktop):
    """A first start: the default agent is written, its model loads with a progress bar."""
    d = real_desktop(wait_open=False)
    qtbot.waitUntil(lambda: d.window.setup_banner.isVisible(), timeout=10000)
    assert d.window.setup_banner.text().startswith("First start — Brim wrote the default agent")
    assert str(d.paths.agents_dir) in d.window.setup_banner.text()
    tree = d.window.sidebar.tree
    assert tree.topLevelItem(0).text(0) == "default"
    seen: list[int] = []
    d.window.load_progress.valueChanged.connect(seen.append)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=120_000)
    assert not d.window.load_progress.isVisible()
    # The bar followed the real load up; its last words were that the model was preparing.
    assert seen and max(seen) >= 90
    assert "preparing" in d.window.load_progress.format()
    assert "ctx" in d.window.header.text()


def test_the_header_names_the_bundled_model_before_the_engine_has_loaded_it():
    from pathlib import Path

    from desktop.bridge import agent_model_label
    from engine.config import default_agent
    from engine.providers.embedded import default_model_path

    bundled = default_model_path()
    assert bundled is not None
    assert agent_model_label(default_agent()) == Path(bundled).stem  # e.g. SmolLM2-135M-…
    pinned = default_agent().with_changes(model="/models/qwen2.5-7b-instruct-q4_k_m.gguf")
    assert agent_model_label(pinned) == "qwen2.5-7b-instruct-q4_k_m"


def test_without_a_display_the_app_says_so_instead_of_crashing_in_qt(tmp_path):
    import os
    import subprocess
    import sys

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    result = subprocess.run(
        [sys.executable, "-m", "launcher", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no display" in result.stderr and "brim chat --headless" in result.stderr
    assert "Traceback" not in result.stderr and "Qt platform plugin" not in result.stderr


def test_a_damaged_database_is_moved_aside_and_the_window_opens_on_a_new_one(
    qtbot, real_desktop, tmp_path
):
    from engine.paths import BrimPaths
    from tests.desktop.conftest import agent_toml
    from tests.helpers.fake_engines import FakeLlamaServer

    home = tmp_path / "home"
    paths = BrimPaths.under(home).ensure()
    paths.db_path.write_bytes(b"not a database at all " * 50)
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)}, home=home)
        qtbot.waitUntil(lambda: d.window.setup_banner.isVisible(), timeout=10000)
        text = d.window.setup_banner.text()
        assert "could not be read" in text and "moved aside" in text
        (aside,) = paths.db_path.parent.glob("brim.sqlite3.corrupt-*")
        assert str(aside) in text.replace("\n", "")
        assert aside.read_bytes().startswith(b"not a database")  # kept, not deleted
        d.window.composer.setPlainText("Still here?")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        assert "Still here?" in d.window.transcript.toPlainText()


def test_a_database_that_cannot_be_opened_is_captured_not_waited_on(tmp_path):
    """`--screenshot` with a database from a newer Brim: the banner is captured, no hang."""
    import sqlite3
    import subprocess
    import sys

    from engine.paths import BrimPaths

    paths = BrimPaths.under(tmp_path / "home").ensure()
    with sqlite3.connect(paths.db_path) as conn:
        conn.execute("PRAGMA user_version = 999")
    shot = tmp_path / "shot.png"
    result = subprocess.run(
        [sys.executable, "-m", "desktop", "--data-dir", str(tmp_path / "home"),
         "--send", "hi", "--screenshot", str(shot)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert shot.exists() and shot.stat().st_size > 10_000


def test_brim_with_a_workspace_opens_the_window_on_it_and_a_missing_one_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    base = [sys.executable, "-m", "launcher", "--data-dir", str(tmp_path / "home")]
    missing = subprocess.run(
        [*base, "--workspace", str(tmp_path / "nope")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 64
    assert missing.stderr.strip() == f"brim: --workspace {tmp_path / 'nope'} does not exist"
    # A real folder is taken (no usage error): the window starts, here without a display.
    found = subprocess.run(
        [*base, "--workspace", str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert found.returncode == 2 and "no display" in found.stderr
