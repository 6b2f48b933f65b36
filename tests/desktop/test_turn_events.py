"""What the window hears of one ordinary turn, through the bridge, from the engine's own
session: the order the window's drawing relies on (the row shown as sent before anything
runs, the state pill, the streamed text, the receipt after the figures it reports, ready
last). A change to that order in the engine fails here."""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import Qt

from engine.events import Event, StateEvent

# The rail's report follows the first piece of the answer (the gauge grows with it) and
# again whenever it grows by more after a quarter of a second; the rest is fixed.
ONE_TURN = re.compile(
    r"accepted step state:waiting-for-the-engine state:streaming "
    r"(delta answer_progress context_report )+(delta )?"
    r"usage context context_report last_request turn_end context_report state:ready "
)


def _heard(events: list[Event]) -> str:
    """The kinds in order, states by name, a run of deltas as one."""
    out: list[str] = []
    for event in events:
        name = event.type
        if isinstance(event, StateEvent):
            name = "state:" + event.state.replace(" ", "-")
        if not (name == "delta" and out and out[-1] == "delta"):
            out.append(name)
    return " ".join(out) + " "


def test_one_turn_is_heard_in_the_session_s_order(qtbot: Any, open_desktop: Any):
    d = open_desktop()
    d.engine.script(deltas=["The", " answer", " is", " forty-two."])
    heard: list[Event] = []
    d.app.bridge.event.connect(heard.append)
    d.window.composer.setPlainText("Tell me")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    qtbot.waitUntil(lambda: bool(heard) and heard[-1] == StateEvent("ready"))
    said = _heard(heard)
    assert ONE_TURN.fullmatch(said), said
    assert "".join(getattr(e, "text", "") for e in heard if e.type == "delta") == (
        "The answer is forty-two."
    )
