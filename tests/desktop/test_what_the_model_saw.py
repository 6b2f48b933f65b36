"""What the model saw, in the window (issue 44): after a compaction the transcript dims what
the model's last request no longer carries, under a line where it starts, and the rail's
button opens the last request, part by part, with what changed."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.widgets.request_view import RequestView
from desktop.widgets.transcript_rows import CUT_LABEL
from tests.desktop.conftest import agent_toml
from tests.desktop.test_rail import _send, _summaries_or
from tests.helpers.fake_engines import FakeLlamaServer


def _compacted(qtbot: Any, d: Any) -> None:
    for i in range(20):
        _send(qtbot, d.window, f"Message {i}: " + "words " * 100)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        if "compaction" in d.window.rail.timeline.marker_kinds():
            return
    raise AssertionError("no compaction happened")


def test_after_a_compaction_the_rows_above_the_last_request_are_dimmed_under_a_line(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        _compacted(qtbot, d)
        _send(qtbot, d.window, "One more question.")
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        rows = d.window.transcript.rows()
        cuts = [i for i, r in enumerate(rows) if r.kind == "cut"]
        assert len(cuts) == 1 and rows[cuts[0]].text == CUT_LABEL
        above, below = rows[: cuts[0]], rows[cuts[0] + 1 :]
        assert above and all(r.dimmed for r in above)
        assert not any(r.dimmed for r in below)
        # The first message is gone from the request; the last one is in it.
        assert any(r.kind == "user" and r.text.startswith("Message 0:") for r in above)
        assert any(r.kind == "user" and r.text == "One more question." for r in below)
        assert CUT_LABEL in d.window.transcript.toPlainText()


def test_the_rails_button_opens_what_the_model_saw_with_its_parts_and_changes(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = _summaries_or("ok")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        for text in ("Where do peppers grow?", "And tomatoes?"):
            _send(qtbot, d.window, text)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        qtbot.mouseClick(d.window.rail.saw_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.window.overlay.kind == "request", timeout=10000)
        view = d.window.overlay.scroll.widget()
        assert isinstance(view, RequestView)
        text = d.window.overlay.text()
        assert "What the model saw" in text
        assert "Kept messages:" in text and "The new message:" in text
        assert "added" in text and "And tomatoes?" in text
        assert "And tomatoes?" in view.request.toPlainText()
        assert view.view_event.rendered_by == "llama-server's /apply-template"
