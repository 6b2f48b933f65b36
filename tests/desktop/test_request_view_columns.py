"""The "What the model saw" view lays its changes out in columns a reader can scan: the
role, the position and the preview start at the same place on every line, whatever the
change is called, and a part holding one message does not read "1 messages"."""

from __future__ import annotations

from PySide6.QtGui import QFontMetricsF

from desktop.widgets.request_view import RequestView
from engine.api import RequestViewEvent


def _change(kind: str, role: str, position: int, was: int, preview: str) -> dict[str, object]:
    return {
        "change": kind,
        "role": role,
        "id": preview,
        "preview": preview,
        "position": position,
        "was": was,
        "tokens": 5,
    }


def _view(qtbot) -> RequestView:  # type: ignore[no-untyped-def]
    event = RequestViewEvent(
        sent=True,
        at=0.0,
        engine_tokens=120,
        counted_tokens=118,
        parts=[
            {"part": "checkpoint", "tokens": 60, "messages": 1},
            {"part": "kept", "tokens": 40, "messages": 4},
        ],
        changes=[
            _change("changed", "user", 5, 5, "Which viewpoint has the best sunset?"),
            _change("added", "assistant", 6, -1, "Alfama suits you."),
            _change("removed", "user", -1, 2, "Where can we hear fado?"),
        ],
        compared=True,
        messages=[{"role": "user", "content": "Which food must I avoid?"}],
    )
    view = RequestView(event)
    qtbot.addWidget(view)
    return view


def test_each_changes_role_and_preview_start_at_the_same_place_on_every_line(qtbot):
    view = _view(qtbot)
    metrics = QFontMetricsF(view.changes.font())
    lines = view.changes.text().splitlines()
    previews = ("Which viewpoint", "Alfama suits", "Where can")
    assert len(lines) == 3 and all(p in line for p, line in zip(previews, lines, strict=True))
    role_starts = {metrics.horizontalAdvance(line[: line.index(line.split()[1])]) for line in lines}
    preview_starts = {
        metrics.horizontalAdvance(line[: line.index(p)])
        for p, line in zip(previews, lines, strict=True)
    }
    assert len(role_starts) == 1 and len(preview_starts) == 1


def test_a_part_of_one_message_says_message(qtbot):
    view = _view(qtbot)
    text = view.parts.text()
    assert "1 message" in text and "1 messages" not in text
    assert "4 messages" in text
