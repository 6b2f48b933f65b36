"""The header's pill tells what the engine is doing: "unreachable" when it cannot be reached
(not a green "ready"), "waiting for the engine" until a token arrives, and an error met
again on each retry is one row with a count. The real session, a llama-server double."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt

from engine.api import StateEvent
from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer, Reply


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_an_unreachable_engine_says_so_and_its_repeated_error_is_one_row(qtbot, real_desktop):
    fake = FakeLlamaServer(n_ctx=8192, slots=1)
    with fake:
        d = real_desktop(agents={"a.toml": agent_toml("local", fake.url)})
        qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
    # The engine is gone now (stopped as a user's server would be).
    _send(qtbot, d.window, "hello")
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20_000)
    qtbot.waitUntil(lambda: d.window.header.state() == "unreachable", timeout=5_000)
    errors = [row for row in d.window.transcript.rows() if row.kind == "error"]
    assert len(errors) == 1
    for _ in range(2):
        assert d.window.banner.isVisible()
        d.window.retry()
        qtbot.waitUntil(lambda: d.app.bridge.busy, timeout=5_000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20_000)
    errors = [row for row in d.window.transcript.rows() if row.kind == "error"]
    assert len(errors) == 1 and errors[0].repeats == 3
    assert "(×3)" in d.window.transcript.toPlainText()
    assert d.window.header.state() == "unreachable"


def test_the_pill_waits_for_the_engine_until_the_first_token_then_streams(qtbot, real_desktop):
    def slow_start(_request: Any) -> Reply:
        time.sleep(1.0)  # the engine reads the prompt before it writes
        return Reply(text="The answer, at last.", token_delay=0.05)

    with FakeLlamaServer(n_ctx=8192, slots=1) as fake:
        fake.responder = slow_start
        d = real_desktop(agents={"a.toml": agent_toml("local", fake.url)})
        qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
        states: list[str] = []
        text_when: dict[str, str] = {}

        def seen(event: Any) -> None:
            if isinstance(event, StateEvent):
                states.append(event.state)
                text_when[event.state] = d.window.transcript.toPlainText()

        d.app.bridge.event.connect(seen)
        _send(qtbot, d.window, "hello")
        qtbot.waitUntil(lambda: d.window.header.state() == "waiting for the engine", timeout=5000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20_000)
    assert "waiting for the engine" in states and "streaming" in states
    assert states.index("waiting for the engine") < states.index("streaming")
    assert "The answer" not in text_when["waiting for the engine"]
