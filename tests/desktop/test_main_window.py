"""The minimal window, driven the way a user would drive it, on the engine's own session
over a scripted in-process engine."""

from __future__ import annotations

import os
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.format import format_context
from engine.conversation_claim import ConversationClaim
from engine.messages import assistant, user
from engine.providers.errors import EngineUnreachable, ServerError
from tests.helpers.fake_provider import InProcessEngine
from tests.helpers.scripted_session import ScriptedSessions


def _type_and_send(qtbot: Any, window: Any, text: str) -> None:
    qtbot.keyClicks(window.composer, text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _transcript(window: Any) -> str:
    return window.transcript.toPlainText()


def test_typing_a_message_and_pressing_enter_sends_it_from_the_engine_thread(qtbot, open_desktop):
    d = open_desktop()
    _type_and_send(qtbot, d.window, "What is Brim?")
    qtbot.waitUntil(lambda: d.sent == ["What is Brim?"])
    # Shown as sent once the session has taken it.
    qtbot.waitUntil(lambda: "What is Brim?" in _transcript(d.window))
    assert d.window.composer.toPlainText() == ""
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert d.session.call_threads == {d.app.engine.thread_id}


def test_shift_enter_starts_a_new_line_instead_of_sending(qtbot, open_desktop):
    d = open_desktop()
    qtbot.keyClicks(d.window.composer, "first line")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(d.window.composer, "second line")
    assert d.window.composer.toPlainText() == "first line\nsecond line"
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: d.sent == ["first line\nsecond line"])


def test_streamed_deltas_appear_in_the_transcript_once_the_flush_timer_runs(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script(deltas=["The", " answer", " is", " forty-two."])
    _type_and_send(qtbot, d.window, "Tell me")
    qtbot.waitUntil(lambda: "The answer is forty-two." in _transcript(d.window))


def test_a_burst_of_deltas_reaches_the_transcript_in_a_few_flushes_not_one_per_token(
    qtbot, open_desktop
):
    d = open_desktop()
    d.engine.script(deltas=[f"t{i} " for i in range(400)])
    flushes: list[str] = []
    d.window.stream.flushed.connect(flushes.append)
    _type_and_send(qtbot, d.window, "Stream a lot")
    qtbot.waitUntil(lambda: "t399" in _transcript(d.window))
    assert "".join(flushes) == "".join(f"t{i} " for i in range(400))
    assert len(flushes) < 40


def test_the_header_shows_the_context_numbers_and_the_window_source(qtbot, open_desktop):
    # An engine that cannot count a prompt: Brim estimates it.
    d = open_desktop(engine=InProcessEngine(window=131072, counts=False))
    # Before any request the header shows Brim's own estimate of the prompt, marked with ~.
    estimate = d.window.rail.report().used
    assert estimate > 0
    shown = format_context(estimate, 131072, "server", estimated=True)
    assert shown.startswith("ctx ~") and shown in d.window.header.text()
    seen: list[str] = []
    d.app.bridge.event.connect(lambda _event: seen.append(d.window.header.text()))
    d.window.composer.setPlainText("Tell me about the weather. " * 990)  # about 6K tokens
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    # The engine's count of the request as it lands, then Brim's estimate of the next one.
    assert any("ctx 6K/128K server · last request" in text for text in seen), seen
    qtbot.waitUntil(lambda: d.window.header.state() == "ready")
    assert "turn 1" in d.window.header.text()
    assert "ctx ~" in d.window.header.text() and "· next request" in d.window.header.text()


def test_an_engine_that_counts_the_prompt_is_shown_without_the_estimate_mark(qtbot, open_desktop):
    d = open_desktop(engine=InProcessEngine(window=131072))
    counted = d.window.rail.report().used
    assert counted > 0
    shown = format_context(counted, 131072, "server", estimated=False)
    assert "~" not in shown and shown in d.window.header.text()


def test_the_header_says_loading_model_until_the_session_is_ready(qtbot, open_desktop):
    d = open_desktop(engine=InProcessEngine(ready_after_s=0.5), wait_open=False)
    qtbot.waitUntil(lambda: d.window.header.state() == "loading model")
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=5000)
    assert "SmolLM2-135M-Instruct" in d.window.header.text()


def test_a_message_typed_while_the_model_loads_shows_as_sent_and_goes_once_it_is_ready(
    qtbot, open_desktop
):
    d = open_desktop(engine=InProcessEngine(ready_after_s=1.0), wait_open=False)
    qtbot.waitUntil(lambda: d.window.header.state() == "loading model")
    _type_and_send(qtbot, d.window, "Are you there?")
    qtbot.waitUntil(lambda: "Are you there?" in _transcript(d.window))
    assert d.window.composer.toPlainText() == ""
    assert d.sent == []  # still loading: nothing has reached the model
    _type_and_send(qtbot, d.window, "Hello?")  # one message at a time, as in a turn
    qtbot.waitUntil(lambda: "already waiting for the model" in d.window.banner.text())
    assert d.window.composer.toPlainText() == "Hello?"
    qtbot.waitUntil(lambda: d.sent == ["Are you there?"], timeout=5000)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert not d.window.banner.isVisible()  # "still running" is no longer true
    assert _transcript(d.window).count("Are you there?") == 1


@pytest.mark.parametrize("taken_first", [True, False])
def test_esc_while_the_model_loads_gives_the_waiting_message_back_unsent(
    qtbot, open_desktop, taken_first
):
    d = open_desktop(engine=InProcessEngine(ready_after_s=1.0), wait_open=False)
    qtbot.waitUntil(lambda: d.window.header.state() == "loading model")
    _type_and_send(qtbot, d.window, "Never mind")
    if taken_first:  # Esc after the session took it (its row shown), or at once
        qtbot.waitUntil(lambda: "Never mind" in _transcript(d.window))
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    qtbot.waitUntil(lambda: d.window.composer.toPlainText() == "Never mind")
    assert "Never mind" not in _transcript(d.window)  # it was never sent: no row says so
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=5000)
    assert d.sent == []
    d.window.composer.clear()
    _type_and_send(qtbot, d.window, "Now then")  # the session is not left held
    qtbot.waitUntil(lambda: d.sent == ["Now then"], timeout=5000)


def test_esc_while_the_model_loads_keeps_both_the_waiting_message_and_what_was_typed_since(
    qtbot, open_desktop
):
    d = open_desktop(engine=InProcessEngine(ready_after_s=1.0), wait_open=False)
    qtbot.waitUntil(lambda: d.window.header.state() == "loading model")
    _type_and_send(qtbot, d.window, "Summarize notes.md")
    qtbot.waitUntil(lambda: "Summarize notes.md" in _transcript(d.window))
    qtbot.keyClicks(d.window.composer, "and list the open questions")
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    qtbot.waitUntil(lambda: "Summarize notes.md" in d.window.composer.toPlainText())
    assert d.window.composer.toPlainText() == "Summarize notes.md\n\nand list the open questions"
    assert "Summarize notes.md" not in _transcript(d.window)


def test_a_message_sent_the_moment_a_reopened_conversation_shows_goes_to_it(qtbot, open_desktop):
    d = open_desktop()

    def send_at_once(_info: object) -> None:  # before the reopening has said it is done
        d.window.composer.setPlainText("right away")
        d.window.composer.submit()

    d.app.bridge.opened.connect(send_at_once)
    assert d.app.bridge.reopen()
    qtbot.waitUntil(lambda: d.sent == ["right away"], timeout=5000)
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert not d.window.banner.isVisible()
    assert d.window.composer.toPlainText() == ""


def test_the_header_says_streaming_while_a_turn_runs(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script("Hello from the fake.", hold=True)
    _type_and_send(qtbot, d.window, "Keep going")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    assert d.window.send_button.text() == "Stop"


def test_esc_cancels_the_running_turn(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script(deltas=["partial"], hold=True)
    _type_and_send(qtbot, d.window, "Write a long essay")
    qtbot.waitUntil(lambda: "partial" in _transcript(d.window))
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: d.session.cancels == 1)
    qtbot.waitUntil(lambda: d.engine.cancelled == 1)  # the engine stopped answering
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert d.window.header.state() == "ready"
    assert d.window.send_button.text() == "Send"


def test_a_message_typed_during_a_turn_stays_in_the_composer(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script("Hello from the fake.", hold=True)
    _type_and_send(qtbot, d.window, "first")
    qtbot.waitUntil(lambda: d.window.header.state() == "streaming")
    _type_and_send(qtbot, d.window, "second")
    qtbot.waitUntil(lambda: "still running" in d.window.banner.text())  # the session says why
    assert d.window.composer.toPlainText() == "second"
    assert d.sent == ["first"]
    assert _transcript(d.window).count("second") == 0


def test_an_error_event_shows_a_banner_naming_the_problem(qtbot, open_desktop):
    refused = "http://127.0.0.1:11434 refused the connection"
    d = open_desktop()
    d.engine.script(deltas=[], error=EngineUnreachable(refused))
    _type_and_send(qtbot, d.window, "Hello?")
    qtbot.waitUntil(lambda: d.window.banner.isVisible())
    assert d.window.banner.text() == f"Engine unreachable — {refused}"
    assert refused in _transcript(d.window)
    assert "Traceback" not in _transcript(d.window)


def test_the_next_message_after_an_error_still_gets_an_answer(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script(deltas=[], error=ServerError("boom"))
    d.engine.script("Hello from the fake.")
    _type_and_send(qtbot, d.window, "one")
    qtbot.waitUntil(lambda: d.window.banner.isVisible() and not d.app.bridge.busy)
    _type_and_send(qtbot, d.window, "two")
    qtbot.waitUntil(lambda: "Hello from the fake." in _transcript(d.window))
    assert not d.window.banner.isVisible()


def test_an_engine_unreachable_at_start_says_why_and_the_message_sent_waits_for_retry(
    qtbot, open_desktop
):
    """The session starts without a window when the engine does not answer: the banner
    says why, the header says unreachable, and a message sent then is kept (its turn asks
    the engine again, and says why again); Retry, once the engine answers, runs it."""
    unreachable = EngineUnreachable("cannot reach http://127.0.0.1:8080")
    d = open_desktop(wait_open=False, engine=InProcessEngine(report_error=unreachable))
    qtbot.waitUntil(lambda: d.window.banner.isVisible())
    assert d.window.banner.text() == "Engine unreachable — cannot reach http://127.0.0.1:8080"
    qtbot.waitUntil(lambda: d.window.header.state() == "unreachable")
    _type_and_send(qtbot, d.window, "anyone there?")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert d.window.banner.text() == "Engine unreachable — cannot reach http://127.0.0.1:8080"
    assert d.window.header.state() == "unreachable"
    assert d.sent == []
    kinds = [r.kind for r in d.window.transcript.rows()]
    assert kinds == ["user", "error"]  # the message stays, with where it failed
    d.engine.report_error = None  # the engine is back
    qtbot.mouseClick(d.window.banner.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Hello from the fake." in _transcript(d.window))
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    assert d.sent == ["anyone there?"]
    assert d.window.header.state() == "ready"


def test_a_session_that_cannot_start_says_why_in_a_banner(qtbot, open_desktop):
    """A start that fails (the conversation is open in another Brim) leaves no session:
    the banner says why, and a message sent then is refused as not started."""
    claims: list[ConversationClaim] = []

    def held_elsewhere(sessions: ScriptedSessions) -> None:  # by the other Brim
        assert sessions.conversation_id is not None
        claims.append(ConversationClaim.take(sessions.paths.open_dir, sessions.conversation_id))

    history = [user("Hi"), assistant("Hello.")]
    try:
        d = open_desktop(wait_open=False, history=history, prepare=held_elsewhere)
        qtbot.waitUntil(lambda: d.window.banner.isVisible())
        conversation = d.sessions.conversation_id
        assert d.window.banner.text().endswith(
            f"conversation {conversation!r} is open in another Brim (process {os.getpid()}); "
            "close it there first, or start a new conversation"
        )
        assert d.window.header.state() == "not started"
        _type_and_send(qtbot, d.window, "anyone there?")
        qtbot.waitUntil(lambda: "The session did not start." in d.window.banner.text())
        assert d.sent == []
    finally:
        for claim in claims:
            claim.release()


def test_a_window_warning_appears_once_as_a_notice_row(qtbot, open_desktop):
    warning = "num_ctx is not pinned: Brim assumes 128K until Ollama loads the model"
    d = open_desktop(engine=InProcessEngine(warnings=[warning]), max_iterations=2)
    qtbot.waitUntil(lambda: warning in _transcript(d.window))
    assert _transcript(d.window).count(warning) == 1
    assert [r.kind for r in d.window.transcript.rows()] == ["notice"]
    # A turn says another warning (the iteration ramp: half of this agent's 2 steps used).
    _type_and_send(qtbot, d.window, "hello")
    qtbot.waitUntil(lambda: not d.app.bridge.busy)
    (ramp,) = [r for r in d.window.transcript.rows() if r.kind == "notice" and r.text != warning]
    assert ramp.level == "warning"
    other = ramp.text
    # The second time: the conversation opens again, and its engine says the warning again.
    assert d.app.bridge.reopen()
    qtbot.waitUntil(lambda: len(d.sessions.sessions) == 2 and not d.app.bridge.busy)
    qtbot.waitUntil(lambda: "Hello from the fake." in _transcript(d.window))
    notices = [r.text for r in d.window.transcript.rows() if r.kind == "notice"]
    assert notices.count(warning) == 1 and notices.count(other) == 1


def test_the_saved_conversation_is_shown_when_it_opens(qtbot, open_desktop):
    d = open_desktop(history=[user("What is 2+2?"), assistant("It is **4**.")])
    text = _transcript(d.window)
    assert "What is 2+2?" in text
    assert "It is 4." in text
    assert "turn 1" in d.window.header.text()


def test_a_finished_answer_is_rendered_as_markdown(qtbot, open_desktop):
    d = open_desktop()
    d.engine.script(deltas=["Two ", "**bold**", " points:\n\n", "- one\n- two\n"])
    _type_and_send(qtbot, d.window, "Format this")
    qtbot.waitUntil(lambda: "Worked for" in _transcript(d.window))
    text = _transcript(d.window)
    assert "Two bold points:" in text
    assert "**" not in text


def test_each_answer_ends_with_a_receipt_of_tokens_sent_and_produced(qtbot, open_desktop):
    d = open_desktop(engine=InProcessEngine(window=131072))
    d.engine.script(prompt_tokens=43000, completion_tokens=1100)
    _type_and_send(qtbot, d.window, "Hi")
    qtbot.waitUntil(lambda: "Worked for" in _transcript(d.window))
    assert "↑ 43K ↓ 1.1K" in _transcript(d.window)


def test_a_gguf_model_path_is_shown_by_its_file_name(qtbot, open_desktop):
    d = open_desktop(model="/home/me/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in d.window.header.text()
    assert "/home/me" not in d.window.header.text()
