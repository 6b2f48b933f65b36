"""A second Brim window on the same data folder never writes into the conversation the first
one has open: it starts a new conversation and says why, and refuses to switch to it."""

from __future__ import annotations

from typing import Any

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer


def test_a_second_window_starts_a_new_conversation_and_will_not_open_the_busy_one(
    qtbot: Any, real_desktop: Any
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        first = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, first, "Plan the garden")
        garden = first.app.navigator.conversation_id
        assert garden

        second = real_desktop(home=first.paths.root)
        qtbot.waitUntil(lambda: second.app.navigator.conversation_id is not None, timeout=10000)
        assert second.app.navigator.conversation_id != garden
        banner = second.window.setup_banner
        assert banner.isVisible()
        assert "open in another Brim window" in banner.text()

        # Clicking the busy conversation in the second window's sidebar: refused, it stays.
        mine = second.app.navigator.conversation_id
        second.app.navigator.refresh()
        qtbot.waitUntil(lambda: second.window.sidebar.item_for(garden) is not None)
        item = second.window.sidebar.item_for(garden)
        second.window.sidebar.tree.itemClicked.emit(item, 0)
        qtbot.waitUntil(lambda: second.window.banner.isVisible())
        assert "open in another Brim window or chat" in second.window.banner.text()
        assert second.app.navigator.conversation_id == mine
        chat_and_wait(qtbot, second, "Fix the bike")  # the second window still works
        assert "Fix the bike" in second.window.transcript.toPlainText()
        assert "Fix the bike" not in first.window.transcript.toPlainText()
