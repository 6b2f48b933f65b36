"""Yesterday's conversation opened again: every receipt under its answer, the whole timeline.

The whole app on a real store with real sessions against a fake llama-server; the
conversation is opened again by restarting the app and by switching away and back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.format import format_receipt
from desktop.widgets.transcript import Row, merge_live_rows, rows_for
from engine.messages import assistant, notice, user
from engine.store.records import Receipt
from tests.desktop.conftest import agent_toml
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _respond(request: Any) -> Reply:
    if is_compaction(request.body):
        return Reply(text=SUMMARY)
    return Reply(text=f"Answer number {len(request.body['messages'])}.")


@pytest.fixture
def llama() -> Iterator[FakeLlamaServer]:
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _respond
        yield fake


def _send(qtbot: Any, d: Any, text: str) -> None:
    d.window.composer.setPlainText(text)
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)


def _chat_with_a_compaction(qtbot: Any, d: Any) -> None:
    """At least three turns, a compaction among them and a turn after it."""
    for i in range(20):
        _send(qtbot, d, f"Message {i}: " + "words " * 500)
        if "compaction" in d.window.rail.timeline.marker_kinds() and i >= 1:
            break
    _send(qtbot, d, "One more after the compaction.")


def _turns(d: Any) -> list[tuple[str, str]]:
    """What the user reads turn by turn: their message, the answer, its receipt."""
    return [
        (row.kind, row.text)
        for row in d.window.transcript.rows()
        if row.kind in ("user", "assistant", "receipt")
    ]


def _timeline(d: Any) -> tuple[list[tuple[int, int]], list[tuple[int, str]]]:
    report = d.window.rail.report()
    return (
        [(p.request, p.used) for p in report.timeline],
        [(m.after, m.kind) for m in report.markers],
    )


def _assert_each_receipt_under_its_answer(turns: list[tuple[str, str]]) -> None:
    kinds = [kind for kind, _ in turns]
    assert kinds == ["user", "assistant", "receipt"] * (len(kinds) // 3), kinds
    assert len(kinds) >= 9


def test_restarting_the_app_shows_each_receipt_under_its_answer_and_the_whole_timeline(
    qtbot, real_desktop, llama, tmp_path
):
    d = real_desktop(agents={"chat.toml": agent_toml("chat", llama.url)})
    _chat_with_a_compaction(qtbot, d)
    turns, timeline = _turns(d), _timeline(d)
    _assert_each_receipt_under_its_answer(turns)
    assert "compaction" in [kind for _, kind in timeline[1]]
    d.app.navigator.save_window()
    d.app.shutdown()

    again = real_desktop(home=tmp_path / "home")
    qtbot.waitUntil(lambda: again.window.header.state() == "ready", timeout=10000)
    assert _turns(again) == turns
    assert _timeline(again) == timeline
    assert "no requests yet" not in again.window.rail.timeline.toolTip()

    # The next request continues the chart; it does not restart at request 1.
    _send(qtbot, again, "A question the next day.")
    points = _timeline(again)[0]
    assert points[: len(timeline[0])] == timeline[0]
    assert points[-1][0] == timeline[0][-1][0] + 1
    assert [kind for kind, _ in _turns(again)][-3:] == ["user", "assistant", "receipt"]


def test_switching_to_another_conversation_and_back_keeps_receipts_and_timeline(
    qtbot, real_desktop, llama
):
    d = real_desktop(agents={"chat.toml": agent_toml("chat", llama.url)})
    _chat_with_a_compaction(qtbot, d)
    turns, timeline = _turns(d), _timeline(d)
    first = d.app.navigator.conversation_id
    qtbot.mouseClick(d.window.sidebar.new_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id != first, timeout=10000)
    assert d.window.rail.report().timeline == ()

    item = d.window.sidebar.item_for(first)
    d.window.sidebar.tree.itemClicked.emit(item, 0)
    qtbot.waitUntil(lambda: d.app.navigator.conversation_id == first, timeout=10000)
    qtbot.waitUntil(lambda: bool(d.window.rail.report().timeline), timeout=10000)
    _assert_each_receipt_under_its_answer(_turns(d))
    assert _turns(d) == turns
    assert _timeline(d) == timeline


def test_a_saved_receipt_goes_under_its_turns_answer_and_notices_not_past_the_next_question():
    def at(message: Any, when: float) -> Any:
        return replace(message, created=when)

    messages = [
        at(user("first"), 100.0),
        at(assistant("answer one"), 110.0),
        at(notice("Trimmed 2 older messages to fit the context window"), 111.0),
        at(user("second"), 200.0),
        at(assistant("answer two"), 230.0),
    ]
    receipts = [
        Receipt("c", 11.0, 900, 40, 12.5, finished_at=111.5),
        Receipt("c", 30.0, 1200, 60, 20.0, finished_at=230.5),
    ]
    rows = rows_for(messages, receipts)
    assert [row.kind for row in rows] == [
        *("user", "assistant", "notice", "receipt"),
        *("user", "assistant", "receipt"),
    ]
    assert rows[3].text == format_receipt(11.0, 900, 40, 12.5, finished_at=111.5)


def test_a_live_receipt_is_not_shown_twice_when_its_saved_copy_reads_a_minute_later():
    saved = rows_for(
        [replace(user("q"), created=100.0), replace(assistant("a"), created=110.0)],
        [Receipt("c", 1.0, 10, 2, 2.0, finished_at=120.0)],
    )
    live = [Row("user", "q"), Row("assistant", "a"), Row("receipt", "Worked for 1.0s • 23:59")]
    merged = merge_live_rows(saved, live)
    assert [row.kind for row in merged] == ["user", "assistant", "receipt"]
    assert merged[2].text == saved[2].text
