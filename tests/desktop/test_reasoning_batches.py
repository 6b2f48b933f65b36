"""A thinking model's reasoning crossing to the window (issue 49): streamed pieces are joined
before they cross, as the answer's are, but never into the answer's batch; what a conversation
drew while away keeps the two apart when it is drawn again."""

from __future__ import annotations

from desktop.session_slot import SessionSlot
from engine.events import DeltaEvent, Event, ReasoningEndEvent, ReasoningEvent


def test_reasoning_and_answer_pieces_cross_in_batches_of_their_own_kind():
    crossed: list[object] = []
    slot = SessionSlot(1, lambda _key, item: crossed.append(item))
    for event in [
        ReasoningEvent("Let me "),
        ReasoningEvent("think."),
        ReasoningEndEvent(3, 0.5),
        DeltaEvent("The "),
        DeltaEvent("answer."),
    ]:
        slot.sink(event)
    drawn: list[Event] = [
        slot.unbatch(item) if isinstance(item, list) else item  # type: ignore[misc]
        for item in crossed
    ]
    assert drawn == [
        ReasoningEvent("Let me think."),
        ReasoningEndEvent(3, 0.5),
        DeltaEvent("The answer."),
    ]
    for event in drawn:
        slot.remember(event)
    slot.remember(DeltaEvent(" More."))
    assert slot.view()[-3:] == [
        ReasoningEvent("Let me think."),
        ReasoningEndEvent(3, 0.5),
        DeltaEvent("The answer. More."),
    ]


def test_a_thought_right_after_answer_text_starts_a_batch_of_its_own():
    crossed: list[object] = []
    slot = SessionSlot(1, lambda _key, item: crossed.append(item))
    slot.sink(DeltaEvent("Part one."))
    slot.sink(ReasoningEvent("(a second thought)"))
    slot.sink(DeltaEvent(" Part two."))
    assert [slot.unbatch(item) for item in crossed] == [  # type: ignore[arg-type]
        DeltaEvent("Part one."),
        ReasoningEvent("(a second thought)"),
        DeltaEvent(" Part two."),
    ]
