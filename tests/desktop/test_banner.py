"""The fault banner draws what the error event says: Retry iff the engine marked it retryable."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.providers.classify import classify_http
from engine.providers.errors import (
    ContextOverflow,
    EngineUnreachable,
    ModelNotFound,
    ProtocolError,
    ServerError,
    ToolsUnsupported,
)
from engine.window.resolution import AbsurdWindow


def _send(qtbot, window, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


@pytest.mark.parametrize("retryable", [True, False])
def test_retry_is_shown_exactly_when_the_event_says_retryable(qtbot, open_desktop, retryable):
    # The kind does not decide: an engine error the engine calls final gets no Retry.
    error = EngineUnreachable("refused")
    error.retryable = retryable
    d = open_desktop()
    d.engine.script(deltas=[], error=error)
    _send(qtbot, d.window, "Hello?")
    qtbot.waitUntil(lambda: d.window.banner.isVisible() and not d.app.bridge.busy)
    assert d.window.banner.retry_button.isVisibleTo(d.window.banner) is retryable


def test_the_engine_marks_retryable_the_faults_a_second_attempt_can_cure():
    """The kinds the desktop used to list itself (unreachable, server_error, protocol_error,
    model_not_found) are retryable at the source; a final refusal is not."""
    for cured in (
        EngineUnreachable("refused"),
        ServerError("crashed", status=500),
        ProtocolError("garbled"),
        ModelNotFound("no such model"),
    ):
        assert cured.retryable is True, cured.kind
    for final in (
        ContextOverflow("too long"),
        ToolsUnsupported("no tools", hint="a flag"),
        AbsurdWindow("0 tokens"),
        classify_http(400, "bad request", engine="vLLM", url="http://x"),
    ):
        assert final.retryable is False, final.kind
