"""Reversible compaction in the window: the compaction row's Show / Restore and its timeline
marker show what it replaced, and Restore (confirmed past the auto-compact mark) puts it
back. Real sessions against a fake llama-server, clicked as a user clicks."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _respond(request: Any) -> Reply:
    return Reply(text=SUMMARY if is_compaction(request.body) else "ok")


def _compacted(qtbot: Any, d: Any) -> Any:
    """Chat until a compaction; its row in the transcript."""
    for i in range(20):
        chat_and_wait(qtbot, d, f"Message {i}: " + "words " * 100)
        rows = [r for r in d.window.transcript.rows() if r.marker == "compaction" and r.ref]
        if rows:
            return rows[0]
    raise AssertionError("no compaction row")


def _click_link(qtbot: Any, view: Any, href: str) -> None:
    """Click the transcript's link `href` where it is drawn."""
    document = view.document()
    cursor = QTextCursor(document)
    spots = []
    for position in range(1, document.characterCount()):
        cursor.setPosition(position)
        if cursor.charFormat().anchorHref() == href:
            spots.append(position)
    assert spots, f"no link {href}"
    cursor.setPosition(spots[len(spots) // 2])
    view.setTextCursor(cursor)
    view.ensureCursorVisible()
    rect = view.cursorRect(cursor)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center() - QPoint(2, 0))


def _history(qtbot: Any, d: Any) -> list[Any]:
    got: list[Any] = []
    d.app.bridge.session_call(lambda s: s.history(), got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    return got[0]


def test_the_compaction_row_shows_what_it_replaced_and_restore_puts_it_back(
    qtbot, real_desktop, tmp_path
):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        row = _compacted(qtbot, d)
        assert "↺ Show / Restore" in d.window.transcript.toPlainText()
        live = [m.content for m in _history(qtbot, d) if m.role == "user" and m.kind == "chat"]
        assert not any(text.startswith("Message 0:") for text in live)  # summarized away

        _click_link(qtbot, d.window.transcript, f"compaction:{row.ref}")
        qtbot.waitUntil(lambda: d.window.overlay.compaction_view() is not None, timeout=5000)
        view = d.window.overlay.compaction_view()
        text = d.window.overlay.text()
        assert text.startswith("Compaction 1 — what it replaced\nCompaction 1 replaced these ")
        # The row and the view count the same messages.
        replaced = int(text.split("replaced these ", 1)[1].split(" ", 1)[0])
        assert f"compacted {replaced} messages into a summary" in row.text, row.text
        assert "You: Message 0: words" in text
        assert "Restored, the next request would be " in text
        # Past the auto-compact mark (the engine says so): Restore asks first.
        assert view.view_event.fits is False
        qtbot.mouseClick(view.restore_button, Qt.MouseButton.LeftButton)
        assert not view.confirm.isHidden() and view.restore_button.isHidden()
        assert "past the auto-compact mark" in d.window.overlay.text()
        requests = len(fake.chat_requests)
        qtbot.mouseClick(view.anyway_button, Qt.MouseButton.LeftButton)

        qtbot.waitUntil(lambda: not d.window.overlay.isVisible(), timeout=5000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=5000)
        assert len(fake.chat_requests) == requests  # a restore sends nothing to the model
        notices = [r.text for r in d.window.transcript.rows() if r.kind == "notice"]
        assert any(t.startswith("restored ") and "compaction 1" in t for t in notices), notices
        restored_row = next(r for r in d.window.transcript.rows() if r.ref == row.ref)
        assert restored_row.restored
        assert "↺ restored · show what it replaced" in d.window.transcript.toPlainText()
        history = _history(qtbot, d)
        sent = [m.content for m in history if m.role == "user" and m.kind == "chat"]
        assert sent[0].startswith("Message 0:")
        assert not any(m.kind == "summary" for m in history)

        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        rows = [r for r in again.window.transcript.rows() if r.ref == row.ref]
    assert rows and rows[0].restored  # the record says it was restored


def test_a_compaction_marker_on_the_timeline_opens_what_it_replaced(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        row = _compacted(qtbot, d)
        chart = d.window.rail.timeline
        qtbot.waitUntil(lambda: any(m.ref == row.ref for _, m in chart.marker_positions()))
        x = next(at for at, m in chart.marker_positions() if m.ref == row.ref)
        assert "click a C marker" in chart.toolTip()
        qtbot.mouseClick(chart, Qt.MouseButton.LeftButton, pos=QPoint(int(x), chart.height() // 2))
        qtbot.waitUntil(lambda: d.window.overlay.compaction_view() is not None, timeout=5000)
        assert d.window.overlay.compaction_view().view_event.compaction == row.ref
        qtbot.keyClick(d.window.overlay, Qt.Key.Key_Escape)
        assert not d.window.overlay.isVisible()
