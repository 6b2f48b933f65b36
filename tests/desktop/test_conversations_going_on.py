"""Conversations that keep going while the user looks elsewhere: an answer left while it
streams goes on in its own session, the sidebar says which conversations work and which
finished unseen, and coming back shows the whole answer."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer

LONG = " ".join(f"word{n}" for n in range(60)) + " THE-END."


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _click(d: Any, conversation_id: str) -> None:
    item = d.window.sidebar.item_for(conversation_id)
    assert item is not None
    d.window.sidebar.tree.setCurrentItem(item)
    d.window.sidebar.tree.itemClicked.emit(item, 0)


def _two_conversations(qtbot: Any, d: Any) -> tuple[str, str]:
    """A first conversation and a second one, each with one turn; the second is shown."""
    _send(qtbot, d.window, "Conversation A")
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    first = d.app.navigator.conversation_id
    qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id != first and not d.app.bridge.busy)
    _send(qtbot, d.window, "Conversation B")
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
    second = d.app.navigator.conversation_id
    qtbot.waitUntil(lambda: d.window.sidebar.item_for(first) is not None)
    return first, second


def _start_long_answer_in(qtbot: Any, d: Any, fake: Any, conversation: str) -> None:
    _click(d, conversation)
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id == conversation)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    fake.script_reply(LONG, token_delay=0.04)
    _send(qtbot, d.window, "Tell me a long story")
    qtbot.waitUntil(lambda: "word3" in d.window.transcript.toPlainText(), timeout=10000)


def _leave_while_answering(qtbot: Any, d: Any, fake: Any, first: str, second: str) -> None:
    """A long answer starts streaming in `first`, and the user opens `second` meanwhile."""
    _start_long_answer_in(qtbot, d, fake, first)
    _click(d, second)
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id == second, timeout=5000)


def test_switching_away_from_a_streaming_answer_and_back_shows_the_whole_answer(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:  # two slots of its own: both at once
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        first, second = _two_conversations(qtbot, d)
        _leave_while_answering(qtbot, d, fake, first, second)
        qtbot.waitUntil(lambda: "Conversation B" in d.window.transcript.toPlainText())
        assert "word3" not in d.window.transcript.toPlainText()
        assert "THE-END" not in d.window.transcript.toPlainText()
        # The other conversation is usable meanwhile: a message there is answered.
        fake.script_reply("B answers while A writes.")
        _send(qtbot, d.window, "Still there?")
        qtbot.waitUntil(
            lambda: "B answers while A writes." in d.window.transcript.toPlainText(),
            timeout=10000,
        )
        assert d.app.bridge.activity_of(first) == "working"  # A has not finished yet
        assert "word" not in d.window.transcript.toPlainText()

        qtbot.waitUntil(lambda: d.app.bridge.activity_of(first) == "unseen", timeout=15000)
        _click(d, first)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == first, timeout=5000)
        qtbot.waitUntil(lambda: "THE-END." in d.window.transcript.toPlainText(), timeout=5000)
        text = d.window.transcript.toPlainText()
        assert LONG in " ".join(text.split())
        assert text.count("Tell me a long story") == 1
        assert "Still there?" not in text
        assert not d.app.bridge.busy


def test_an_answer_still_streaming_on_return_goes_on_streaming_where_it_is(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        first, second = _two_conversations(qtbot, d)
        _leave_while_answering(qtbot, d, fake, first, second)
        qtbot.wait(300)
        _click(d, first)  # back before it ends: what it wrote meanwhile, then the rest
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == first, timeout=5000)
        qtbot.waitUntil(lambda: "word3" in d.window.transcript.toPlainText(), timeout=5000)
        assert d.app.bridge.busy  # the Stop button is this conversation's again
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=15000)
        text = d.window.transcript.toPlainText()
        assert LONG in " ".join(text.split())
        assert text.count("Tell me a long story") == 1
        assert d.app.bridge.sessions() == 1  # B, idle and left, was closed


def test_the_sidebar_marks_a_working_conversation_and_one_that_finished_unseen(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        sidebar = d.window.sidebar
        first, second = _two_conversations(qtbot, d)
        _leave_while_answering(qtbot, d, fake, first, second)
        qtbot.waitUntil(lambda: sidebar.activity_of(first) == "working")
        blank = sidebar.marks.icon("").cacheKey()  # no mark: an empty icon of a mark's size
        assert sidebar.item_for(first).icon(0).cacheKey() != blank
        assert sidebar.activity_of(second) == ""
        assert sidebar.tree.currentItem() is sidebar.item_for(second)  # the open one
        qtbot.waitUntil(lambda: sidebar.activity_of(first) == "unseen", timeout=15000)
        assert sidebar.tree.currentItem() is sidebar.item_for(second)
        _click(d, first)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == first, timeout=5000)
        qtbot.waitUntil(lambda: sidebar.activity_of(first) == "")  # seen now
        assert sidebar.item_for(first).icon(0).cacheKey() == blank
        assert sidebar.tree.currentItem() is sidebar.item_for(first)


def test_the_memory_browser_the_agent_editor_and_learn_elsewhere_leave_the_answer_streaming(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        first, second = _two_conversations(qtbot, d)
        _start_long_answer_in(qtbot, d, fake, first)
        browser = d.app.memory.open_browser()
        qtbot.waitUntil(browser.isVisible)
        browser.close()
        d.app.agent_editing.edit("chat")
        qtbot.waitUntil(lambda: d.app.agent_editing.dialog is not None)
        d.app.agent_editing.dialog.reject()
        assert d.app.bridge.busy  # neither stopped the answer
        _click(d, second)
        qtbot.waitUntil(lambda: d.app.navigator.conversation_id == second, timeout=5000)
        _send(qtbot, d.window, "/learn")  # in the other conversation, beside the answer
        qtbot.waitUntil(lambda: d.app.memory.learn_dialog is not None, timeout=5000)
        qtbot.waitUntil(lambda: d.app.bridge.activity_of(first) == "unseen", timeout=20000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20000)
        for dialog in (d.app.memory.learn_dialog, d.app.memory.review_dialog):
            if dialog is not None:
                dialog.close()
        _click(d, first)
        qtbot.waitUntil(lambda: "THE-END." in d.window.transcript.toPlainText(), timeout=5000)
        assert "cancel" not in d.window.transcript.toPlainText().lower()


def test_the_highlight_stays_on_the_open_conversation_when_another_cannot_open(qtbot, real_desktop):
    from engine.conversation_claim import ConversationClaim

    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        first, second = _two_conversations(qtbot, d)
        sidebar = d.window.sidebar
        # The first conversation is lost to another Brim window once this one left it.
        claim = ConversationClaim.take(d.paths.open_dir, first)
        try:
            _click(d, first)  # the click moves the tree's current item; the refusal puts it back
            qtbot.waitUntil(lambda: d.window.banner.isVisible())
            assert d.app.navigator.conversation_id == second
            assert sidebar.tree.currentItem() is sidebar.item_for(second)
        finally:
            claim.release()


def test_deleting_a_conversation_that_answers_unseen_stops_its_session(qtbot, real_desktop):
    from engine.store import Store

    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        first, second = _two_conversations(qtbot, d)
        _leave_while_answering(qtbot, d, fake, first, second)
        assert d.app.bridge.sessions() == 2
        d.window.sidebar.delete(first)

        def deleted() -> bool:
            with Store.open(d.paths.db_path) as store:
                return store.get_conversation(first) is None

        qtbot.waitUntil(deleted, timeout=5000)
        qtbot.waitUntil(lambda: d.app.bridge.sessions() == 1)
        assert not d.app.bridge.holds(first)
        qtbot.wait(300)  # no listing read before the delete landed shows it again
        assert d.window.sidebar.item_for(first) is None
        assert not d.window.banner.isVisible()
        qtbot.wait(300)
        with Store.open(d.paths.db_path) as store:
            assert store.get_conversation(first) is None  # nothing wrote it back
