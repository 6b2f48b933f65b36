"""The memory browser over a real memory root, the waiting badge, and `/learn` in the window.

Edits by another process are made by a real subprocess writing the file; the browser must
show them through the watcher, without being reopened.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox

from desktop.app import DesktopApp
from desktop.memory_browser import MemoryBrowser
from engine.config import default_agent
from engine.memory import MemoryService
from engine.memory.receipts import Ticket
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.desktop.conftest import MemoryDesktop
from tests.engine.memory.fakes import FakeModel, Save, role_of, saving
from tests.engine.memory.helpers import queue_facts, sentences
from tests.helpers.fake_engines import FakeLlamaServer, Reply

TABS = "I always want tabs, never spaces."


def _one_entry(service: MemoryService) -> None:
    (s,) = queue_facts(service, [TABS])
    assert service.accept([s.id])[0].ok  # global/fact-0.md


def _browser(d: MemoryDesktop, qtbot: Any) -> MemoryBrowser:
    d.window.composer.setPlainText("/memory")
    QTest.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: d.desk.browser is not None, timeout=3000)
    browser = d.desk.browser
    qtbot.waitUntil(lambda: browser.loads > 0, timeout=5000)
    return browser


def _other_process_writes(path: Path, text: str) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        path = Path({str(path)!r})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text({text!r}, encoding="utf-8")
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_an_edit_by_another_process_appears_in_the_open_browser(memory_desktop: Any, qtbot: Any):
    d = memory_desktop(prepare=_one_entry)
    browser = _browser(d, qtbot)
    assert browser.entry_paths() == ["global/fact-0.md"]
    assert browser.select("global/fact-0.md")
    assert TABS in browser.text.toPlainText()
    entry = d.service.layout.global_scope().folder / "fact-0.md"

    _other_process_writes(entry, "The user wants tabs, and eight columns wide.\n")
    qtbot.waitUntil(lambda: "eight columns" in browser.text.toPlainText(), timeout=10000)
    assert browser.title.text() == "The user wants tabs, and eight columns wide."

    added = d.service.layout.agent_scope("coder").folder / "style.md"
    _other_process_writes(added, "Prefer small pure functions.\n")
    qtbot.waitUntil(lambda: "agents/coder/style.md" in browser.entry_paths(), timeout=10000)
    assert browser.selected_entry() is not None  # the selection survived the re-reads
    assert browser.selected_entry().canonical == "global/fact-0.md"


def test_forget_asks_first_and_only_a_confirmed_forget_deletes(memory_desktop: Any, qtbot: Any):
    d = memory_desktop(prepare=_one_entry)
    browser = _browser(d, qtbot)
    browser.select("global/fact-0.md")
    entry = d.service.layout.global_scope().folder / "fact-0.md"
    keys = browser.selected_entry().fields.keys
    assert keys

    browser.tree.setFocus()
    QTest.keyClick(browser.tree, Qt.Key.Key_Delete)  # Delete asks, as Forget… does
    box = browser.confirmation()
    assert box is not None and box.isVisible() and "global/fact-0.md" in box.text()
    QTest.keyClick(box, Qt.Key.Key_Escape)  # Escape keeps it
    qtbot.waitUntil(lambda: browser.confirmation() is None, timeout=3000)
    assert entry.exists()

    browser.forget_button.click()
    box = browser.confirmation()
    forget = next(b for b in box.buttons() if b.text() == "Forget")
    assert box.buttonRole(forget) == QMessageBox.ButtonRole.DestructiveRole
    forget.click()
    qtbot.waitUntil(lambda: browser.entry_paths() == [], timeout=5000)
    assert not entry.exists()
    assert "Forgot global/fact-0.md" in browser.status.text()
    # The sentence it quoted is revoked: that message cannot be suggested from again.
    assert all(d.service.store.ledger.is_revoked(k) for k in keys)


def test_explain_shows_the_entrys_recent_receipts(memory_desktop: Any, qtbot: Any):
    def prepare(service: MemoryService) -> None:
        _one_entry(service)
        scope = service.layout.global_scope()
        snap = service.store.snapshot([scope], assign_ids=True).entries[0]
        ticket = Ticket(
            "t-1", snap.id, snap.canonical, scope.key, snap.epoch, snap.hash,
            "standing", "conv-rcpt", "0123456789abcdef",
        )  # fmt: skip
        service.receipts.complete(service.receipts.write_pending([ticket]), prompt_tokens=900)

    d = memory_desktop(prepare=prepare)
    browser = _browser(d, qtbot)
    browser.select("global/fact-0.md")
    browser.explain_button.click()
    qtbot.waitUntil(lambda: "completed" in browser.receipts.text(), timeout=5000)
    text = browser.receipts.text()
    assert "standing" in text and "conversation conv-rcpt" in text
    assert "request 0123456789ab" in text


def test_open_file_hands_the_entrys_file_to_the_system(memory_desktop: Any, qtbot: Any):
    d = memory_desktop(prepare=_one_entry)
    browser = _browser(d, qtbot)
    opened: list[QUrl] = []
    browser.open_url = opened.append
    browser.select("global/fact-0.md")
    browser.open_button.click()
    entry = d.service.layout.global_scope().folder / "fact-0.md"
    assert [u.toLocalFile() for u in opened] == [str(entry)]


def test_the_composer_offers_learn_and_the_memory_commands(memory_desktop: Any, qtbot: Any):
    d = memory_desktop()
    composer = d.window.composer
    QTest.keyClicks(composer, "/me")
    assert composer.completion_candidates() == ["/memory", "/memory review"]
    composer.clear()
    QTest.keyClicks(composer, "/le")
    assert composer.completion_candidates() == ["/learn"]


def test_the_badge_shows_the_waiting_count_at_start(memory_desktop: Any, qtbot: Any):
    d = memory_desktop(prepare=lambda s: queue_facts(s, sentences(3)))
    badge = d.window.memory_badge
    qtbot.waitUntil(badge.isVisible, timeout=3000)
    assert badge.text().startswith("3 memory suggestions waiting")
    assert d.window.review_queue.waiting == 3


# -- /learn ---------------------------------------------------------------------------------

PREF = "I always prefer British spelling in everything you write."


def _learning_app(qtbot: Any, fake: FakeLlamaServer, home: Path) -> tuple[DesktopApp, str]:
    paths = BrimPaths.under(home)
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake"
    )
    app = DesktopApp(
        lambda sink: ChatSession(agent, paths, sink, memory=True),
        memory_root=paths.memory_dir,
    )
    qtbot.addWidget(app.window)
    app.window.show()
    with qtbot.waitSignal(app.bridge.opened, timeout=10000) as opened:
        pass
    return app, opened.args[0].conversation_id


def _send(app: DesktopApp, qtbot: Any, text: str) -> None:
    app.window.composer.setPlainText(text)
    QTest.keyClick(app.window.composer, Qt.Key.Key_Return)


def test_learn_shows_its_progress_then_opens_the_review_over_the_whole_queue(
    qtbot: Any, tmp_path: Path
):
    waiting = MemoryService(BrimPaths.under(tmp_path).memory_dir)
    queue_facts(waiting, ["I always run the tests before I commit anything."], conversation="c0")
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = FakeModel(extract=saving(Save(PREF, "spelling", "British spelling.")))
        app, _conversation = _learning_app(qtbot, fake, tmp_path)
        try:
            _send(app, qtbot, f"Hello. {PREF}")
            qtbot.waitUntil(lambda: not app.bridge.busy, timeout=20000)
            seen: list[str] = []
            app.bridge.event.connect(lambda e: seen.append(type(e).__name__))
            _send(app, qtbot, "/learn")
            desk = app.memory
            # Shown once the session has taken the command.
            qtbot.waitUntil(lambda: desk.learn_dialog is not None, timeout=5000)
            assert desk.learn_dialog.isVisible()
            qtbot.waitUntil(lambda: desk.review_dialog is not None, timeout=30000)
            assert not desk.learn_dialog.isVisible()
            assert "LearnProgressEvent" in seen
            dialog = desk.review_dialog
            qtbot.waitUntil(lambda: len(dialog.items()) == 2, timeout=5000)
            quotes = sorted(i.suggestion.quote for i in dialog.items())
            assert quotes == sorted([PREF, "I always run the tests before I commit anything."])
        finally:
            app.shutdown()


def test_cancelling_learn_stops_it_and_opens_no_review(qtbot: Any, tmp_path: Path):
    def hang(request: Any) -> Reply:
        if role_of(request.body) == "extractor":  # never answered
            return Reply(text="", fail="hang")
        return Reply(text="ok")

    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = hang
        app, conversation = _learning_app(qtbot, fake, tmp_path)
        try:
            _send(app, qtbot, f"Hello. {PREF}")
            qtbot.waitUntil(lambda: not app.bridge.busy, timeout=20000)
            _send(app, qtbot, "/learn")
            desk = app.memory
            qtbot.waitUntil(lambda: desk.learn_dialog is not None, timeout=5000)
            dialog = desk.learn_dialog
            qtbot.waitUntil(lambda: len(fake.chat_requests) >= 2, timeout=20000)
            QTest.keyClick(dialog, Qt.Key.Key_Escape)
            assert dialog.cancelling
            qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=20000)
            qtbot.waitUntil(lambda: not app.bridge.busy, timeout=20000)
            assert desk.review_dialog is None
            assert "Learning cancelled" in app.window.transcript.toPlainText()
            # The claim was given back: /learn again takes up the same messages.
            marks = BrimPaths.under(tmp_path).memory_dir / ".reflected-conversations.json"
            claimed = json.loads(marks.read_text(encoding="utf-8"))["conversations"]
            assert conversation not in claimed
        finally:
            app.shutdown()
