"""The streaming answer's draft: kept while it streams, gone once the answer is stored, and
never brought back as a second copy of an answer that was stored."""

from __future__ import annotations

from pathlib import Path

from engine.events import DeltaEvent, StateEvent
from engine.messages import assistant, user
from engine.session.answer_draft import DRAFT_FILE, AnswerDraft


def _stream(draft: AnswerDraft, *pieces: str) -> None:
    draft.observe(StateEvent("streaming"))
    for piece in pieces:
        draft.observe(DeltaEvent(piece))


def test_a_draft_of_an_answer_stored_whole_is_not_brought_back(tmp_path: Path):
    draft = AnswerDraft(lambda: tmp_path, every_s=0)
    _stream(draft, "Paris is ", "the capital")
    assert (tmp_path / DRAFT_FILE).exists()
    # Stored in full, then the process ended before the draft was dropped.
    history = [user("Capital of France?"), assistant("Paris is the capital of France.")]
    assert draft.recover(history) == []
    assert not (tmp_path / DRAFT_FILE).exists()


def test_each_answer_of_a_turn_starts_its_own_draft(tmp_path: Path):
    draft = AnswerDraft(lambda: tmp_path, every_s=0)
    _stream(draft, "I will read the file.")
    _stream(draft, "The file says ", "hello")
    recovered = draft.recover([user("Read it"), assistant("I will read the file.")])
    assert recovered[0].content == "The file says hello"
    assert recovered[0].meta_value("partial") and recovered[1].is_notice


def test_a_thinking_models_reasoning_stays_out_of_the_draft(tmp_path):
    from engine.events import ReasoningEvent

    draft = AnswerDraft(lambda: tmp_path, every_s=0.0)
    draft.observe(StateEvent("thinking"))
    draft.observe(ReasoningEvent("Let me think about the answer."))
    draft.observe(StateEvent("streaming"))
    draft.observe(DeltaEvent("The answer"))
    draft.observe(StateEvent("thinking"))  # a model that thinks midway
    draft.observe(ReasoningEvent("(thinks again midway)"))
    draft.observe(StateEvent("streaming"))
    draft.observe(DeltaEvent(" goes on."))
    recovered = draft.recover([user("Q?")])
    assert recovered[0].content == "The answer goes on."
    assert "think" not in recovered[0].content
