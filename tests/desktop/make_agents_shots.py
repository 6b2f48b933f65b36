"""Agents made in the window, for the README: the real app, fake llama-servers, three PNGs.

    xvfb-run -s "-screen 0 1600x1000x24" python -m tests.desktop.make_agents_shots [OUT_DIR]

Writes (default folder docs/screenshots):
- agent-new.png: the editor on a new agent made with the sidebar's "+", every setting of the schema;
- agent-menu.png: an agent's right-click menu (New conversation, Edit, Duplicate, Delete,
  New agent), taken from the screen, so it needs a real X display (Xvfb);
- agents-sidebar.png: the sidebar after a hand-written broken file was dropped into the
  agents folder (its error in place) and an agent was deleted (the Undo bar).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from desktop.app import DesktopApp, ensure_application
from engine.paths import BrimPaths
from tests.desktop.conftest import agent_toml
from tests.desktop.make_screenshots import close, pump_for, pump_until, send
from tests.helpers.fake_engines import FakeLlamaServer

DEFAULT_OUT = Path("docs/screenshots")


def _agent_item(app: DesktopApp, name: str):  # type: ignore[no-untyped-def]
    tree = app.window.sidebar.tree
    for index in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(index)
        if item.data(0, Qt.ItemDataRole.UserRole)[1] == name:
            return item
    return None


def _save(widget_grab, target: Path) -> Path:  # type: ignore[no-untyped-def]
    if not widget_grab.save(str(target)):
        raise OSError(f"could not write {target}")
    return target


def agents_shots(root: Path, out: Path) -> list[Path]:
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with FakeLlamaServer(n_ctx=8192) as coder, FakeLlamaServer(n_ctx=4096) as writer:
        coder.script_reply("Use pathlib: Path('notes').glob('*.md').")
        (paths.agents_dir / "coder.toml").write_text(agent_toml("coder", coder.url), "utf-8")
        (paths.agents_dir / "writer.toml").write_text(agent_toml("writer", writer.url), "utf-8")
        app = DesktopApp(paths=paths, reflect_on_close=False)
        try:
            window = app.window
            window.resize(1280, 800)
            window.show()
            pump_until(lambda: window.header.state() == "ready")
            send(app, "How do I list the markdown files in a folder?")
            sidebar = window.sidebar

            # New agent: the editor opens on its file.
            QTest.mouseClick(sidebar.new_agent_button, Qt.MouseButton.LeftButton)
            editing = app.agent_editing
            assert editing is not None
            pump_until(lambda: editing.dialog is not None)
            dialog = editing.dialog
            assert dialog is not None
            pump_for(0.5)
            shots.append(_save(dialog.grab(), out / "agent-new.png"))
            name = dialog.field("name")
            name.setFocus()
            name.selectAll()  # type: ignore[attr-defined]
            QTest.keyClicks(name, "reviewer")
            QTest.keyClick(name, Qt.Key.Key_Return)
            pump_until(lambda: editing.dialog is None and _agent_item(app, "reviewer") is not None)

            # An agent's right-click menu, from the screen (a popup is a window of its own).
            item = _agent_item(app, "coder")
            point = sidebar.tree.visualItemRect(item).center()
            menu_target = out / "agent-menu.png"

            def grab_menu() -> None:
                menu = QApplication.activePopupWidget()
                screen = QGuiApplication.primaryScreen()
                corner = window.mapToGlobal(QPoint(0, 0))
                picture = screen.grabWindow(0, corner.x(), corner.y(), 520, 360)
                _save(picture, menu_target)
                if isinstance(menu, QMenu):
                    menu.close()

            QTimer.singleShot(700, grab_menu)
            sidebar.tree.customContextMenuRequested.emit(point)
            shots.append(menu_target)

            # A broken file dropped in by hand, then an agent deleted (Undo offered).
            (paths.agents_dir / "typo.toml").write_text('name = "typo"\nnum_cxt = 8192\n', "utf-8")
            pump_until(lambda: _agent_item(app, "typo.toml") is not None)
            sidebar.delete_agent_requested.emit("writer")
            pump_until(lambda: _agent_item(app, "writer") is None and sidebar.undo_bar.isVisible())
            sidebar.tree.setCurrentItem(_agent_item(app, "reviewer"))
            pump_for(0.5)
            shots.append(_save(window.grab(), out / "agents-sidebar.png"))
            return shots
        finally:
            close(app)


def make_agents_shots(out: Path = DEFAULT_OUT) -> list[Path]:
    ensure_application()
    with tempfile.TemporaryDirectory(prefix="brim-shot-") as tmp:
        return agents_shots(Path(tmp), out)


if __name__ == "__main__":
    for path in make_agents_shots(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(path)
