"""Each submission carries an id (AcceptedEvent.submission), and the window keys the user's
row by it: a message refused or dropped later takes back its own row and its own text, not
whichever was typed last."""

from __future__ import annotations

from engine.api import AcceptedEvent, ErrorEvent, WithdrawnEvent, WorkStateEvent
from engine.commands import route


def _typed(window, text: str) -> None:  # type: ignore[no-untyped-def]
    """The composer submits `text` as Enter would; the session's answer is played below."""
    window.composer.blockSignals(True)
    try:
        window.composer.setPlainText(text)
        window.composer.submit()
    finally:
        window.composer.blockSignals(False)


def _user_rows(window) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.text for r in window.transcript.rows() if r.kind == "user"]


def test_every_submission_gets_an_id_of_its_own():
    ids = {route("same words").accepted.submission for _ in range(20)}
    assert len(ids) == 20 and "" not in ids


def test_a_message_refused_after_a_report_was_asked_takes_back_its_own_row(qtbot, open_desktop):
    window = open_desktop().window
    paste = "paste " * 50
    _typed(window, paste)
    window.on_event(AcceptedEvent(paste, "message", True, submission="m1"))
    _typed(window, "/context")  # asked while the message waits for its turn
    window.on_event(AcceptedEvent("/context", "report", False, submission="r1"))
    assert _user_rows(window) == [paste]
    window.on_event(ErrorEvent("message_too_large", "This message is about 9,000 tokens"))
    assert _user_rows(window) == []
    assert window.composer.toPlainText() == paste  # the refused text, not the report's


def test_a_message_withdrawn_after_a_report_row_takes_back_its_own_row(qtbot, open_desktop):
    window = open_desktop().window
    window.on_event(AcceptedEvent("again", "message", True, submission="m1"))
    # `/work clear`, answered beside the waiting message, draws a row below it.
    window.on_event(AcceptedEvent("/work clear", "report", False, submission="r1"))
    window.on_event(WorkStateEvent("", cleared=True))
    window.on_event(WithdrawnEvent("again", "message", submission="m1"))  # Esc while loading
    assert _user_rows(window) == []
    assert "Work state cleared" in window.transcript.toPlainText()
