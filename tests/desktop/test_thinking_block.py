"""A thinking model's reasoning in the window (issue 49), through the real session and
bridge on an in-process engine that thinks: a Thinking block above the answer, live while
the model thinks, folded after it with how long and how much, unfolded on a click, restored
folded when the conversation opens again; the answer's text holds none of it."""

from __future__ import annotations

import re
from typing import Any

from desktop.widgets.transcript import TranscriptView
from engine.events import Event, ReasoningEvent, StateEvent
from engine.messages import assistant, user
from tests.desktop.conftest import chat_and_wait
from tests.helpers.thinking_engine import ThinkingEngine

THOUGHT = [
    "The user wants the capital of Australia.\n",
    "Sydney is the largest city, but the capital is Canberra.",
]
ANSWER = "The capital of Australia is Canberra."


def _text(view: TranscriptView) -> str:
    return view.document().toPlainText()


def test_the_thinking_block_streams_folds_after_the_answer_and_keeps_out_of_it(
    qtbot: Any, open_desktop: Any
):
    engine = ThinkingEngine(window=8192)
    engine.think(THOUGHT)
    engine.script(ANSWER)
    d = open_desktop(engine=engine)
    heard: list[Event] = []
    d.app.bridge.event.connect(heard.append)
    seen_live: list[str] = []
    d.window.transcript.textChanged.connect(lambda: seen_live.append(_text(d.window.transcript)))
    chat_and_wait(qtbot, d, "What is the capital of Australia?")
    view: TranscriptView = d.window.transcript

    # Live: the block said the model was thinking, with the last line it reasoned.
    assert any("Thinking…" in t and "capital is Canberra" in t for t in seen_live)
    assert StateEvent("thinking") in heard
    assert "".join(e.text for e in heard if isinstance(e, ReasoningEvent)) == "".join(THOUGHT)

    # After: one folded block above the answer, its figures, none of the thinking shown.
    kinds = [r.kind for r in view.rows()]
    assert kinds.index("thinking") == kinds.index("assistant") - 1
    block = next(r for r in view.rows() if r.kind == "thinking")
    answer = next(r for r in view.rows() if r.kind == "assistant")
    assert block.complete and not block.expanded
    assert re.fullmatch(r"Thought for \d+\.\d s · ~\d+ tokens", block.title), block.title
    assert answer.text == ANSWER and "Sydney" not in answer.text
    shown = _text(view)
    assert block.title in shown and "Sydney" not in shown
    assert shown.index(block.title) < shown.index(ANSWER)

    # A click unfolds it; another folds it again.
    view.toggle(block.id)
    assert "Sydney is the largest city" in _text(view)
    view.toggle(block.id)
    assert "Sydney" not in _text(view)


def test_a_reopened_conversation_shows_the_thinking_folded(qtbot: Any, open_desktop: Any):
    saved = assistant(ANSWER, reasoning="".join(THOUGHT)).with_meta(
        reasoning_tokens=31, reasoning_s=4.2, reasoning_estimated=True
    )
    d = open_desktop(history=[user("What is the capital of Australia?"), saved])
    view: TranscriptView = d.window.transcript
    qtbot.waitUntil(lambda: any(r.kind == "thinking" for r in view.rows()), timeout=5000)
    block = next(r for r in view.rows() if r.kind == "thinking")
    assert block.text == "".join(THOUGHT) and not block.expanded
    assert block.title == "Thought for 4.2 s · ~31 tokens"
    shown = _text(view)
    assert "Sydney" not in shown and shown.index(block.title) < shown.index(ANSWER)


def test_a_cap_spent_thinking_shows_its_notice_with_continue_and_no_empty_answer(
    qtbot: Any, open_desktop: Any
):
    engine = ThinkingEngine(window=8192)
    engine.think(["Hmm, let me weigh every option once more. "] * 10)
    engine.script("", finish_reason="length", completion_tokens=64)
    d = open_desktop(engine=engine, max_tokens=64)
    chat_and_wait(qtbot, d, "Plan my week.")
    view: TranscriptView = d.window.transcript
    rows = view.rows()
    assert not any(r.kind == "assistant" for r in rows)  # nothing shown as an empty answer
    notice = next(r for r in rows if r.kind == "notice" and "thinking" in r.text)
    assert "spent its whole answer budget of 64 tokens thinking" in notice.text
    assert "▶ Continue" in _text(view)
    assert next(r for r in rows if r.kind == "thinking").complete
