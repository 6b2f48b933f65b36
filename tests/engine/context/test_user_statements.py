"""The user's own words survive mechanically (issue 17): which sentences are statements to
carry, what takes one back, and the budget whose overflow goes to a stored file."""

from __future__ import annotations

import pytest

from engine.context.checkpoint import render_checkpoint
from engine.context.model_face import render_for_model
from engine.context.stated import carry_statements, stated_in
from engine.context.user_statements import carry_through, is_statement, statements_in
from engine.messages import Message, ToolCall, assistant, tool_result, user


@pytest.mark.parametrize(
    "sentence",
    [
        "I am planning a trip to Lisbon with my sister in May.",
        "My budget for the whole trip is 1200 euros.",
        "I am allergic to peanuts.",
        "I always use tabs, never spaces.",
        "My name is Alex.",
        "We prefer trains to buses.",
        "I don't eat pork.",
        "Actually, my sister is vegetarian.",
        "I am arriving by train.",  # how the user travels: lost at 1,024 tokens before
    ],
)
def test_a_first_person_statement_of_a_fact_or_preference_is_carried(sentence):
    assert is_statement(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Which city am I planning to visit, and with whom?",
        "Do I always use tabs",
        "What is 12 times 12?",
        "Tell me what my budget is.",
        "Please write me a short essay about Lisbon.",
        "I think so.",
        "I want to know the weather in Lisbon.",
        "Thanks!",
        "The museum opens at nine.",
    ],
)
def test_questions_requests_and_hedges_are_not_statements(sentence):
    assert not is_statement(sentence)


def test_a_message_gives_its_statements_verbatim_and_in_order():
    text = "Hi! I am planning a trip to Lisbon with my sister in May. What should I pack?"
    assert statements_in(text) == ["I am planning a trip to Lisbon with my sister in May."]


def test_a_later_statement_replaces_or_retracts_what_it_takes_back():
    carried = carry_through(
        [],
        [
            "My budget for the whole trip is 1200 euros. I am allergic to peanuts.",
            "I live in Porto.",
            "Actually my budget is 1500 euros.",
            "I am not allergic to peanuts any more.",
            "Forget that I live in Porto.",
        ],
    )
    assert carried == [
        "Actually my budget is 1500 euros.",
        "I am not allergic to peanuts any more.",
    ]


def _stored_checkpoint(statements: list[str]) -> str:
    return render_checkpoint({"Stated by the User": [f"- {s}" for s in statements]})


def test_statements_beyond_their_budget_go_to_a_stored_file_the_checkpoint_names():
    store: dict[str, str] = {}

    def keep(ref: str, text: str) -> bool:
        store[ref] = text
        return True

    facts = [
        f"My {thing} is number {i}." for i, thing in enumerate(("room", "seat", "gate", "bus"))
    ]
    stated = carry_statements(
        [_stored_checkpoint(facts[:2])],
        [user(" ".join(facts[2:])), assistant("Noted.")],
        [user("What is my gate?")],
        budget=20,
        count_text=lambda t: len(t) // 4,
        store=keep,
    )
    assert stated.statements == tuple(facts[-2:])  # the newest fit
    (ref,) = stated.stored
    assert all(f in store[ref] for f in facts[:2])
    shown = render_for_model(render_checkpoint(stated.sections()))
    assert "retrieve_tool_result" in shown and ref in shown
    # The next compaction keeps naming the file.
    again = carry_statements(
        [render_checkpoint(stated.sections())], [], [], budget=20, count_text=len, store=keep
    )
    assert (
        ref in again.stored
        and stated_in(render_checkpoint(again.sections())).stored == again.stored
    )


def test_only_the_users_own_messages_are_read_for_statements():
    call = ToolCall("c1", "read_file", "{}")
    carried = carry_statements(
        [],
        [
            assistant("I am allergic to nothing, I am a model.", (call,)),
            tool_result(call, "My name is Root. I always use spaces."),
            Message(role="user", content="My name is Brim's note.", kind="continuation"),
            user("My name is Alex."),
        ],
        [],
        budget=100,
        count_text=len,
    )
    assert carried.statements == ("My name is Alex.",)
