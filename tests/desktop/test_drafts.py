"""Unsent text survives a crash and a switch of conversation, each draft with its own."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from desktop.drafts import Drafts
from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer

DRAFT = "Refactor the parser so that errors carry their line numbers"


class Pad(QPlainTextEdit):
    """A text box standing in for the window's composer (the DraftsWindow port)."""

    @property
    def draft_edited(self) -> SignalInstance:
        return self.textChanged

    def typed(self) -> str:
        return self.toPlainText()

    def put_draft(self, text: str) -> None:
        self.setPlainText(text)

    def as_widget(self) -> QWidget:
        return self


def test_a_draft_typed_before_a_crash_is_back_after_the_restart(qtbot, real_desktop, tmp_path):
    with FakeLlamaServer(n_ctx=4096) as fake:
        agents = {"chat.toml": agent_toml("chat", fake.url)}
        first = real_desktop(agents=agents)
        chat_and_wait(qtbot, first, "Hello")
        QTest.keyClicks(first.window.composer, DRAFT)
        qtbot.waitUntil(lambda: DRAFT in str(first.app.library.settings().get("drafts")))
        # A crash: nothing else is saved, and the kernel lets go of the conversation the
        # process had open. A new app on the same data folder.
        first.app.bridge._session._conversation_claim.release()
        second = real_desktop(home=first.paths.root)
        qtbot.waitUntil(lambda: second.window.composer.toPlainText() == DRAFT, timeout=10000)


def test_each_conversation_keeps_its_own_draft_and_sending_clears_it(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        garden = d.app.navigator.conversation_id
        QTest.keyClicks(d.window.composer, "Tomatoes go")
        qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != garden)
        assert d.window.composer.toPlainText() == ""  # the new one starts empty
        chat_and_wait(qtbot, d, "Fix the bike")
        item = d.window.sidebar.item_for(garden)
        d.window.sidebar.tree.itemClicked.emit(item, 0)
        qtbot.waitUntil(lambda: d.window.composer.toPlainText() == "Tomatoes go", timeout=10000)
        QTest.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        qtbot.waitUntil(lambda: garden not in (d.app.library.settings().get("drafts") or {}))


def test_a_typed_new_is_no_draft_of_the_conversation_it_leaves(qtbot, real_desktop, monkeypatch):
    # A draft is saved a while after the typing stops: long enough here that the user both
    # pauses on `/new` (it is saved as the draft) and types in the new conversation before
    # the next save moment.
    monkeypatch.setattr("desktop.drafts.SAVE_AFTER_MS", 2500)
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        garden = d.app.navigator.conversation_id
        composer = d.window.composer
        QTest.keyClicks(composer, "/new")
        qtbot.waitUntil(lambda: "/new" in str(d.app.library.settings().get("drafts")))
        QTest.keyClick(composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id != garden, timeout=10000)
        assert composer.toPlainText() == ""
        assert "Plan the garden" not in d.window.transcript.toPlainText()
        assert "turn" not in d.window.header.text()  # no turn counted in the new one
        QTest.keyClicks(composer, "Fix the bike")
        d.window.sidebar.tree.itemClicked.emit(d.window.sidebar.item_for(garden), 0)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == garden, timeout=10000)
        qtbot.waitUntil(lambda: "Plan the garden" in d.window.transcript.toPlainText())
        assert composer.toPlainText() == ""  # not the `/new` that was sent from here
        assert garden not in (d.app.library.settings().get("drafts") or {})


def test_leaving_after_sending_keeps_the_sent_text_out_of_the_drafts(qtbot):
    # Whether the composer has been emptied by then or still holds the `/new` just sent.
    settings: dict[str, Any] = {}
    composer = Pad()
    qtbot.addWidget(composer)
    drafts = Drafts(composer, lambda: settings, settings.update, lambda: "garden")
    composer.setPlainText("/new")
    drafts.save_now()
    assert settings["drafts"] == {"garden": "/new"}
    drafts.leave(sent="/new")
    assert settings["drafts"] == {}
    assert composer.toPlainText() == ""
    composer.setPlainText("Tomatoes go")  # a draft that was not sent stays
    drafts.leave(sent="/new")
    assert settings["drafts"] == {"garden": "Tomatoes go"}
