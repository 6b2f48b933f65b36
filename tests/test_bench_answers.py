"""The answers benchmark: its scoring on written answers, and a tiny form of it run in-process
on the bundled embedded model (the whole bench: `python -m bench answers --quick`)."""

from __future__ import annotations

import pytest

from bench._answers_clients import SAMPLING, request_options, sampled_agent
from bench._answers_questions import FACTS, PLAIN, facts_conversation, normalised, right
from engine.config import default_agent
from engine.providers.embedded import default_model_path


def test_an_answer_is_right_when_an_accepted_answer_is_in_it_as_whole_words():
    assert right("The capital of France is Paris.", ("paris",))
    assert right("7 + 8 = 15", ("15", "fifteen"))
    assert right("It is FIFTEEN.", ("15", "fifteen"))
    assert right("Your locker code is 4,817.", ("4817",))
    assert right("Água: H₂O", ("h2o", "h₂o"))
    assert not right("150", ("15",))  # a number inside another is not the answer
    assert not right("Parisian cafés are nice.", ("paris",))
    assert not right("", ("paris",))
    assert normalised("  Café,  São-Paulo! ") == "cafe sao paulo"


def test_no_question_carries_its_own_answer_so_an_echo_scores_nothing():
    for q in PLAIN:
        assert not right(q.text, q.accepted), q.text
    for f in FACTS:
        assert not right(f.question, f.accepted), f.question
        assert right(f.statement, f.accepted), f.statement  # the user did say it


def test_the_facts_conversation_states_the_facts_first_and_asks_about_them_last():
    turns = facts_conversation(3, 5)
    assert [t.asks for t in turns[:8]] == [None] * 8
    assert [t.asks for t in turns[8:]] == list(FACTS[:3])
    assert all(right(t.text, f.accepted) for t, f in zip(turns[:3], FACTS[:3], strict=True))
    assert not any(right(t.text, f.accepted) for t in turns[3:8] for f in FACTS)


def test_every_client_answers_at_the_benchs_one_sampling():
    agent = sampled_agent(default_agent().with_changes(max_tokens=48))
    assert agent.temperature == SAMPLING["temperature"] == 0.0
    options = request_options(agent)
    assert options.temperature == 0.0 and options.max_tokens == 48


@pytest.mark.slow
@pytest.mark.skipif(default_model_path() is None, reason="the bundled model is not installed")
def test_a_tiny_form_runs_all_three_clients_on_the_embedded_model_and_scores_brims_path():
    from bench import answers

    form = answers.Form("tiny", plain=2, facts=1, filler=1, windows=(2048,), engines=("embedded",))
    scores = answers.run(form)
    rows = answers.table(form, scores)
    assert [(r["engine"], r["client"]) for r in rows] == [
        ("embedded", "brim"),
        ("embedded", "bare"),
        ("embedded", "sliding"),
    ]
    assert all(
        set(r)
        == {
            "engine",
            "client",
            "plain",
            "facts @2,048",
            "facts, all in view",
            "compactions",
            "refused",
            "seconds",
        }
        for r in rows
    )
    by = {s.client: s for s in scores}
    brim = by["brim"]
    # Brim's path scored what it answered: every question asked, every answer the model's,
    # each marked by the scorer, and the table says the same.
    plain = [a for a in brim.asked if a.set == "plain"]
    assert [a.question for a in plain] == [q.text for q in PLAIN[:2]]
    assert all(a.answer.strip() for a in plain)
    assert [a.right for a in plain] == [
        right(a.answer, q.accepted) for a, q in zip(plain, PLAIN, strict=False)
    ]
    assert rows[0]["plain"] == f"{sum(a.right for a in plain)}/2"
    assert any(a.right for a in plain)  # "What is the capital of France?" -> Paris
    # ... through Brim's own request: its system prompt first; the bare model got none.
    assert plain[0].sent[0].role == "system" and "Brim" in plain[0].sent[0].content
    assert [m.role for m in by["bare"].asked[0].sent] == ["user"]
    facts = [a for a in brim.asked if a.set == "facts @2048"]
    assert [a.question for a in facts] == [FACTS[0].question]
    assert rows[0]["facts @2,048"] == f"{int(facts[0].right)}/1"
    assert rows[1]["facts @2,048"] == "-" and rows[1]["facts, all in view"].endswith("/1")
    assert all(r["seconds"] > 0 for r in rows)


def test_the_summary_sets_brims_plain_score_beside_the_bare_model_and_its_facts_beside_sliding():
    from bench.answers import summarize

    def row(client: str, plain: str, facts: str) -> dict[str, object]:
        return {"engine": "embedded", "client": client, "plain": plain, "facts @1,024": facts}

    rows = [
        row("brim", "8/12", "3/4"),
        row("bare", "7/12", "-"),
        row("sliding", "8/12", "1/4"),
        {"detail": True, "engine": "embedded", "client": "brim"},
    ]
    out = {r["measure"]: (r["brim"], r["baseline"]) for r in summarize(rows)}
    assert out == {
        "embedded: plain answered right (of 12)": (8, 7),
        "embedded: facts @1,024 answered right (of 4)": (3, 1),
    }
