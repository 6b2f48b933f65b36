"""The window at four sizes, on a real X display: the chat keeps its room.

    xvfb-run -a -s "-screen 0 1920x1080x24" env QT_QPA_PLATFORM=xcb \\
        python -m tests.desktop.make_layout_screenshots [OUT_DIR]

Writes window-698x480.png, window-900x600.png, window-1280x800.png, window-1920x1080.png and
window-698x480-rail.png (the folded rail opened) window-900x600-commands.png (the slash popup)
and window-1280x800-jump.png (reading further up while an answer streams; default folder
docs/screenshots): the real
app on a temporary data folder, an agent on a fake llama-server, a poem and an answer cut at
its cap (Continue), memory on with its review queue empty. Below 1,040 px the rail folds into
a toggle, below 770 px the sidebar is a strip of icons.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractSlider

from desktop.app import ensure_application
from desktop.screenshot import grab_window
from engine.paths import BrimPaths
from tests.desktop.make_screenshots import (
    MODEL,
    _last_user,
    agent_file,
    close,
    pump_for,
    pump_until,
    send,
    start,
)
from tests.helpers.fake_engines import FakeLlamaServer, Reply

DEFAULT_OUT = Path("docs/screenshots")
SIZES = [(698, 480), (900, 600), (1280, 800), (1920, 1080)]
POEM = (
    "Here is a short one:\n\n"
    "The kettle hums before the dawn,\n"
    "the window holds a paler blue,\n"
    "the cat is curled where sun has gone,\n"
    "and all the day is new."
)
ESSAY = " ".join(["Rivers carve their valleys over thousands of years, carrying silt."] * 60)


def grab_screen(window: Any, path: Path) -> Path:
    """The window's area of the screen, so a popup above it is in the picture too."""
    screen = QGuiApplication.primaryScreen()
    frame = window.geometry()
    picture = screen.grabWindow(0, frame.x(), frame.y(), frame.width(), frame.height())
    if not picture.save(str(path)):
        raise OSError(f"could not write {path}")
    return path


def layout_shots(root: Path, out: Path) -> list[Path]:
    workspace = root / "project"
    workspace.mkdir()
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    with FakeLlamaServer(n_ctx=8192, slots=1, model=MODEL) as fake:

        def respond(request: Any) -> Reply:
            asked = _last_user(request)
            if asked.startswith("Write a short poem"):
                return Reply(text=POEM)
            if asked.startswith("Tell me more"):
                return Reply(text=ESSAY, token_delay=0.03)
            return Reply(text=ESSAY)

        fake.responder = respond
        text = agent_file("writer", fake.url, "You write clearly.") + "max_tokens = 120\n"
        (paths.agents_dir / "writer.toml").write_text(text)
        app = start(paths, workspace)
        shots = []
        try:
            send(app, "Write a short poem about the morning, four lines.")
            send(app, "Now write a long essay about rivers.")
            for width, height in SIZES:
                app.window.resize(width, height)
                pump_for(0.4)
                name = f"window-{width}x{height}.png"
                shots.append(grab_window(app.window, out / name, (width, height)))
                pump_for(0.1)
            # The slash popup at 900x600: whole descriptions, inside the window.
            app.window.resize(*SIZES[1])
            pump_for(0.2)
            app.window.composer.setFocus()
            QTest.keyClicks(app.window.composer, "/")
            pump_for(0.4)
            shots.append(grab_screen(app.window, out / "window-900x600-commands.png"))
            app.window.composer.clear()
            pump_for(0.1)
            # Reading further up while the next answer streams: "Jump to latest".
            app.window.resize(*SIZES[2])
            pump_for(0.2)
            send(app, "Tell me more about the delta.", wait=False)
            pump_until(lambda: app.window.header.state() == "streaming")
            bar = app.window.transcript.verticalScrollBar()
            bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepSub)
            pump_until(lambda: app.window.transcript.follower.jump.isVisible())
            pump_for(0.3)
            shots.append(grab_window(app.window, out / "window-1280x800-jump.png", SIZES[2]))
            pump_until(lambda: not app.bridge.busy)
            # The folded rail opened from its toggle, in the smallest window.
            app.window.resize(*SIZES[0])
            pump_for(0.2)
            app.window.fitted.rail_toggle.click()
            pump_for(0.4)
            shots.append(grab_window(app.window, out / "window-698x480-rail.png", SIZES[0]))
        finally:
            close(app)
    return shots


def make_layout_screenshots(out: Path = DEFAULT_OUT) -> list[Path]:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brim-layout-") as tmp:
        return layout_shots(Path(tmp), out)


if __name__ == "__main__":
    for path in make_layout_screenshots(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(path)
