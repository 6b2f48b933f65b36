from engine.context.trimming import trim_messages
from engine.messages import Message, assistant, system, user

from .histories import Ids, count, cycle, old_summary, pairing_ok, pinned, total


def seed_example(ids: Ids) -> list[Message]:
    """The trimming walk over a history of units 0-8."""
    return [
        system("You are an auditor."),
        user("audit the repo"),
        *cycle(ids, 8_000),
        user("also check tests"),
        *cycle(ids, 400),
        user("summarize"),
        assistant("All good."),
    ]


def test_a_history_that_fits_comes_back_untouched():
    msgs = seed_example(Ids())
    result = trim_messages(msgs, budget=total(msgs), count_message=count)
    assert result.dropped == 0 and result.messages == msgs and result.fits


def test_the_seed_example_drops_the_large_old_cycle_as_a_unit_and_keeps_the_last_turns():
    msgs = seed_example(Ids())
    result = trim_messages(msgs, budget=total(msgs) - 1_000, count_message=count, protected_turns=2)
    kept = [msgs.index(m) for m in result.messages]
    assert kept == [0, 4, 5, 6, 7, 8]
    assert pairing_ok(result.messages) and result.fits


def test_older_units_are_kept_while_they_fit_and_the_walk_stops_at_the_first_misfit():
    ids = Ids()
    msgs = [
        system("sys"),
        user("first"),
        *cycle(ids, 100),  # small, older: would fit, but sits behind a misfit
        *cycle(ids, 6_000),  # large: does not fit
        *cycle(ids, 100),  # small, newest before the zone: kept
        user("second"),
        assistant("ok"),
    ]
    result = trim_messages(msgs, budget=300, count_message=count, protected_turns=1)
    kept = [msgs.index(m) for m in result.messages]
    assert kept == [0, 6, 7, 8, 9]
    assert result.fits


def test_pinned_task_summary_and_continuation_always_survive():
    ids = Ids()
    task = Message(role="user", content="Workflow task", kind="task")
    msgs = [
        system("sys"),
        pinned(),
        task,
        *old_summary(["a.py"]),
        user("go"),
        *cycle(ids, 5_000),
        user("more"),
        assistant("done"),
    ]
    result = trim_messages(msgs, budget=200, count_message=count, protected_turns=1)
    kinds = [m.kind for m in result.messages]
    assert kinds[:5] == ["chat", "pinned", "task", "summary", "continuation"]
    assert result.messages[0].role == "system"
    assert result.dropped == 3


def test_one_long_agent_turn_keeps_its_request_and_its_newest_cycles():
    ids = Ids()
    msgs = [system("sys"), user("refactor everything")]
    for _ in range(20):
        msgs.extend(cycle(ids, 2_000))
    result = trim_messages(msgs, budget=2_000, count_message=count)
    assert result.messages[:2] == msgs[:2]
    assert result.messages[-2:] == msgs[-2:]
    assert result.fits and result.tokens_after <= 2_000
    assert pairing_ok(result.messages)
    assert result.dropped > 20


def test_the_newest_unit_is_kept_even_when_it_alone_exceeds_the_budget():
    ids = Ids()
    msgs = [system("sys"), user("read it"), *cycle(ids, 2_000), *cycle(ids, 40_000)]
    result = trim_messages(msgs, budget=1_000, count_message=count)
    assert result.messages == [msgs[0], msgs[1], *msgs[-2:]]
    assert not result.fits


def test_a_history_without_any_user_message_still_keeps_its_newest_unit():
    ids = Ids()
    msgs = [system("sys"), *old_summary([]), *cycle(ids, 3_000), *cycle(ids, 300)]
    result = trim_messages(msgs, budget=400, count_message=count)
    assert result.messages == [*msgs[:3], *msgs[-2:]]
