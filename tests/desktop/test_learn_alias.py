"""`/reflect` is `/learn` by another name, in the window as in the chat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app import DesktopApp
from engine.config import default_agent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.helpers.fake_engines import FakeLlamaServer

PREF = "I always prefer British spelling in everything you write."


def test_reflect_shows_the_learn_progress_then_opens_the_review(qtbot: Any, tmp_path: Path):
    paths = BrimPaths.under(tmp_path)
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = FakeModel(extract=saving(Save(PREF, "spelling", "British spelling.")))
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )
        app = DesktopApp(
            lambda sink: ChatSession(agent, paths, sink, memory=True),
            memory_root=paths.memory_dir,
        )
        qtbot.addWidget(app.window)
        app.window.show()
        with qtbot.waitSignal(app.bridge.opened, timeout=10000):
            pass
        try:
            for text in (f"Hello. {PREF}", "/reflect"):
                qtbot.waitUntil(lambda: not app.bridge.busy, timeout=20000)
                app.window.composer.setPlainText(text)
                QTest.keyClick(app.window.composer, Qt.Key.Key_Return)
            desk = app.memory
            # Shown once the session has taken the command.
            qtbot.waitUntil(lambda: desk.learn_dialog is not None, timeout=5000)
            assert desk.learn_dialog.isVisible()
            qtbot.waitUntil(lambda: desk.review_dialog is not None, timeout=30000)
            dialog = desk.review_dialog
            qtbot.waitUntil(lambda: len(dialog.items()) == 1, timeout=5000)
            assert dialog.items()[0].suggestion.quote == PREF
            assert "/reflect" not in app.window.transcript.toPlainText()
        finally:
            app.shutdown()
