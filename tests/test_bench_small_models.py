"""The small-models benchmark's scoring, on canned transcripts (the benchmark itself needs
the embedded models and minutes: `python -m bench small_models`)."""

from __future__ import annotations

from bench._small_models_score import (
    EXPLICIT,
    FACTS,
    PLAIN_QUESTIONS,
    fact_answered,
    fact_present,
    scripted_turns,
    statements_queued,
    summary_voice,
)
from bench.small_models import (
    PLAIN_SETUP,
    Asked,
    Run,
    Sent,
    answering_request,
    fact_rows,
    plain_rows,
)
from engine.messages import system, user


def test_the_script_states_six_facts_between_ordinary_questions_then_asks_about_each():
    turns = scripted_turns()
    assert len(turns) == 20
    stated = [t.fact for t in turns if t.fact is not None]
    asked = [t.asks for t in turns if t.asks is not None]
    assert stated == asked == list(range(6))
    first_question = next(i for i, t in enumerate(turns) if t.asks is not None)
    assert all(t.asks is None for t in turns[:first_question])
    assert sum(t.fact is None and t.asks is None for t in turns) == 8
    # A question never gives its own answer away.
    for fact in FACTS:
        assert not any(key in fact.question.lower() for key in fact.request_keys)
    assert len(PLAIN_QUESTIONS) == 20


def test_the_summary_voice_is_caught_in_the_answers_the_issue_saw_and_a_plain_answer_passes():
    seen = {
        "[The user is asking about 12 times 12, and the answer is: 36]": "bracketed",
        "The user is asking about which city they plan to visit with whom.": "the user is ...",
        "…and they want to know what was decided so far. **Done** • (none)": "placeholder",
        "## Goal\nPlan the trip.": "heading",
        "Critical Context\n- the budget": "heading",
        "Sure. <<<END TRANSCRIPT ccf25d47>> Lisbon.": "transcript markup",
        "- (1 earlier entry left out to fit the summary)": "placeholder",
    }
    for answer, kind in seen.items():
        assert kind in summary_voice(answer), answer
    assert "heading" in summary_voice("…so far. **Done** • (none)")
    for plain in ("144", "You are going to Lisbon with your sister.", "[1, 2, 3]", "- apples"):
        assert summary_voice(plain) == [], plain


def test_a_fact_counts_as_sent_and_answered_by_its_keys_whatever_the_thousands_separator():
    lisbon, budget = FACTS[0], FACTS[1]
    assert fact_present(["I am planning a trip to Lisbon with my sister in May."], lisbon)
    assert not fact_present(["The user plans a trip to Lisbon."], lisbon)  # the sister went
    assert fact_present(["Budget: 1,200 euros"], budget) and fact_answered("1 200 €", budget)
    assert not fact_answered("about a thousand euros", budget)


def test_queued_suggestions_count_once_per_statement_they_quote():
    quotes = [
        "My name is Alex.",
        "my name is alex",  # the same statement again
        "I am arriving by train",
        "I",  # too short to stand for anything
        "The tram is crowded.",
    ]
    assert statements_queued(quotes) == 2
    assert statements_queued(quotes, EXPLICIT) == 1  # the name; the train is the trip's


def test_the_answering_request_is_the_last_one_that_put_the_question_not_a_compaction():
    question = FACTS[3].question
    log = [
        Sent(False, [system("Brim"), user("My name is Alex.")], "Hello"),
        Sent(False, [system("Brim"), user(f"{question}")], "first try"),
        Sent(True, [system("Brim"), user(f"{question}\n\nSummarize the conversation")], "##"),
        Sent(
            False, [system("Brim\n\nThe user told you: My name is Alex."), user(question)], "Alex"
        ),
    ]
    found = answering_request(log, question)
    assert found is not None and found.answer == "Alex"
    assert fact_present(found.sent, FACTS[3])
    assert answering_request(log[:1], question) is None


def _run(variant: str, answers: list[str], sent: list[list[str]], quotes: list[str]) -> Run:
    asked = [Asked(f.question, i, sent[i], answers[i]) for i, f in enumerate(FACTS)]
    return Run(variant, asked, compactions=2, forced=1, quotes=quotes)


def test_the_figures_set_brim_beside_the_sliding_window():
    statements = [[f.statement] for f in FACTS]
    brim = _run(
        "brim",
        ["Lisbon with your sister", "1200 euros", "The user is asking", "Alex", "?", "Alfama"],
        statements,
        ["My name is Alex."],
    )
    sliding = _run("sliding", ["?"] * 6, [[]] * 3 + statements[3:], [])
    rows = {
        r["measure"].split(": ", 1)[1].split(" (")[0]: r
        for r in fact_rows("m", 1024, brim, sliding)
    }
    assert (
        rows["facts in the request with each question"]["brim"],
        rows["facts in the request with each question"]["baseline"],
    ) == (6, 3)
    assert rows["facts answered correctly"]["brim"] == 4
    assert rows["answers in summary voice"]["brim"] == 1
    explicit = rows["suggestions queued quoting the 2 explicit statements"]
    assert (explicit["brim"], explicit["baseline"]) == (1, 2)
    setup = [Asked("s", None, [], "ok")] * PLAIN_SETUP
    after = Run("brim", setup + [Asked(q, None, [], "## Goal") for q in PLAIN_QUESTIONS[:3]])
    floor = Run("brim", setup + [Asked(q, None, [], "144") for q in PLAIN_QUESTIONS[:3]])
    (row,) = plain_rows("m", after, floor)
    assert (row["brim"], row["baseline"]) == (3, 0)


def test_a_larger_window_gets_more_passages_per_question_and_the_same_facts():
    one, three = scripted_turns(), scripted_turns(3)
    assert [t.fact for t in one] == [t.fact for t in three]
    assert [t.asks for t in one] == [t.asks for t in three]
    for short, long in zip(one, three, strict=True):
        if short.fact is None and short.asks is None:
            assert len(long.text) > 2 * len(short.text)
        else:
            assert long.text == short.text
