"""Memory in the real app, end to end: what the user said in one conversation is reflected
on when they leave it, and the suggestion reaches the badge and the review panel."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.helpers.fake_engines import FakeLlamaServer

PREF = "I always prefer British spelling in everything you write."


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_leaving_a_conversation_queues_what_the_user_said_for_review(qtbot, real_desktop):
    model = FakeModel(extract=saving(Save(PREF, "spelling", "British spelling.")))
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)}, reflect_on_close=True)
        assert not d.window.memory_badge.isVisible()
        assert d.window.review_queue.collapsed  # nothing waiting: a header line only
        _send(qtbot, d.window, PREF)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        first = d.app.navigator.conversation_id
        _send(qtbot, d.window, "/new")
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != first, timeout=10000)
        # The reflection runs detached; the desk notices the queue file change on its own.
        qtbot.waitUntil(lambda: d.window.review_queue.waiting == 1, timeout=60000)
        qtbot.waitUntil(lambda: d.window.memory_badge.isVisible(), timeout=10000)
        assert "1 memory suggestion" in d.window.memory_badge.text()
        assert any(PREF in text for text in d.window.review_queue.item_texts())
        assert not d.window.review_queue.collapsed  # the first suggestion opens the panel
