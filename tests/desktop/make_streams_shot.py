"""Conversations that keep going, for the README: the real app on a fake llama-server with two
slots, one PNG of the window with the sidebar's marks.

    xvfb-run -s "-screen 0 1600x1000x24" python -m tests.desktop.make_streams_shot [OUT_DIR]

Writes conversations-working.png (default folder docs/screenshots): "Plan the garden" is
still answering (its mark turns), "Fix the bike" finished while it was not shown (a dot),
and "Write a haiku" is the one open (highlighted).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app import DesktopApp, ensure_application
from engine.paths import BrimPaths
from tests.desktop.conftest import agent_toml
from tests.desktop.make_screenshots import close, new_conversation, pump_for, pump_until, send
from tests.helpers.fake_engines import FakeLlamaServer

DEFAULT_OUT = Path("docs/screenshots")


def _open(app: DesktopApp, conversation: str) -> None:
    sidebar = app.window.sidebar
    item = sidebar.item_for(conversation)
    assert item is not None
    QTest.mouseClick(
        sidebar.tree.viewport(),
        Qt.MouseButton.LeftButton,
        pos=sidebar.tree.visualItemRect(item).center(),
    )
    assert app.navigator is not None
    pump_until(lambda: app.navigator is not None and app.navigator.conversation_id == conversation)


def streams_shot(root: Path, out: Path) -> Path:
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    with FakeLlamaServer(n_ctx=8192, slots=2) as fake:
        (paths.agents_dir / "helper.toml").write_text(agent_toml("helper", fake.url), "utf-8")
        app = DesktopApp(paths=paths, reflect_on_close=False)
        try:
            window = app.window
            window.resize(1280, 800)
            window.show()
            pump_until(lambda: window.header.state() == "ready")
            navigator = app.navigator
            assert navigator is not None
            opened: dict[str, str] = {}
            for n, title in enumerate(("Fix the bike", "Plan the garden", "Write a haiku")):
                if n:
                    new_conversation(app)
                fake.script_reply(f"Happy to help: {title.lower()}.")
                send(app, title)
                opened[title] = str(navigator.conversation_id)
            pump_until(lambda: window.sidebar.item_for(opened["Fix the bike"]) is not None)

            _open(app, opened["Fix the bike"])
            fake.script_reply(
                "Check the chain first. " + "Oil each link, wipe off the excess. " * 12,
                token_delay=0.03,
            )
            send(app, "And the chain?", wait=False)
            pump_until(lambda: "Check the chain" in window.transcript.toPlainText())
            _open(app, opened["Plan the garden"])
            fake.script_reply("Start with the beds that get morning sun. " * 60, token_delay=0.05)
            send(app, "Which beds first?", wait=False)
            pump_until(lambda: "morning sun" in window.transcript.toPlainText())
            _open(app, opened["Write a haiku"])
            pump_until(lambda: app.bridge.activity_of(opened["Fix the bike"]) == "unseen")
            assert app.bridge.activity_of(opened["Plan the garden"]) == "working"
            pump_for(0.4)
            target = out / "conversations-working.png"
            if not window.grab().save(str(target)):
                raise OSError(f"could not write {target}")
            return target
        finally:
            close(app)


def make_streams_shot(out: Path = DEFAULT_OUT) -> Path:
    ensure_application()
    with tempfile.TemporaryDirectory(prefix="brim-shot-") as tmp:
        return streams_shot(Path(tmp), out)


if __name__ == "__main__":
    print(make_streams_shot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
