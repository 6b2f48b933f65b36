"""The facts a user states survive compaction in any language and any phrasing (issue 49):
a German or Chinese fact, or an English one without "I" or "my", is carried into the
checkpoint as the user's own words, quoted and attributed to them, once; and Brim's own
frame around it is said in the conversation's language, so no English line invites an
English answer."""

from __future__ import annotations

import asyncio

import pytest

from engine.context.compaction import compact
from engine.context.model_face import CLOSING, OPENING, render_for_model
from engine.context.stated import carry_statements
from engine.context.user_statements import is_statement
from engine.messages import Message, assistant, system, user

from .histories import count, guided_answers, summaries, text

WINDOW = 4_000

FACTS = {
    "de": [
        "Ich heiße Jonas Weber.",
        "Unser Budget für die Reise beträgt 1200 Euro.",
        "Meine Tochter ist allergisch gegen Erdnüsse.",
        "Wir fliegen am 14. November nach Lissabon.",
    ],
    "zh": [
        "我叫李明。",
        "我们这次旅行的预算是一千二百欧元。",
        "我女儿对花生过敏。",
        "我们十一月十四日飞往里斯本。",
    ],
    "en": ["The deadline for the report is Friday, 14 November."],
}
FILLER = {
    "de": "Erzähl mir bitte mehr über die Stadt und ihre Geschichte",
    "zh": "请再多讲讲这座城市和它的历史",
    "en": "Please tell me more about the city and its history",
}
# What the frame says in each language, where English would invite an English answer.
FRAME = {"de": "Der Nutzer hat dir gesagt:", "zh": "用户告诉过你：", "en": "The user told you:"}
SAID = {"de": "Der Nutzer sagte:", "zh": "用户说过：", "en": "The user said:"}


def _conversation(language: str) -> list[Message]:
    msgs = [system("You are Brim.")]
    for fact in FACTS[language]:
        msgs += [user(fact), assistant(text(300, "gut"))]
    for i in range(10):
        msgs += [user(f"{FILLER[language]} ({i})?"), assistant(text(1_200, "noted"))]
    return msgs


@pytest.mark.parametrize("language", ["de", "zh", "en"])
def test_stated_facts_are_carried_verbatim_quoted_and_once(language: str) -> None:
    summarize = guided_answers({})  # a summarizer that gives nothing usable
    result = asyncio.run(
        compact(_conversation(language), window=WINDOW, count_message=count, summarize=summarize)
    )
    assert result.ok
    (summary,) = summaries(result.messages)
    sent = "\n".join(m.content for m in result.messages)
    for fact in FACTS[language]:
        (line,) = [line for line in summary.content.splitlines() if fact in line]
        # Quoted as the user's words, under the frame's "told you" or "said", never "asked".
        assert f"\u201c{fact}\u201d" in line, fact
        assert line.startswith(("\u201c", SAID[language])), line
        assert sent.count(fact) == 1, fact
    if language != "en":
        assert FRAME[language] in summary.content


@pytest.mark.parametrize("language", ["de", "zh"])
def test_the_frame_follows_the_conversations_language(language: str) -> None:
    result = asyncio.run(
        compact(
            _conversation(language), window=WINDOW, count_message=count,
            summarize=guided_answers({}),
        )
    )  # fmt: skip
    sent = "\n".join(m.content for m in result.messages if m.role != "system" or m.kind)
    assert result.ok and FRAME[language] in sent
    for english in (OPENING, CLOSING, "Let us continue where we left off.", "The user"):
        assert english not in sent, english


@pytest.mark.parametrize(
    "sentence",
    [
        "Ich heiße Jonas Weber.",
        "Je m'appelle Jonas et j'habite à Lyon.",
        "Mi hija se llama Ines y tiene siete años.",
        "Моя дочь Инес, ей семь лет.",
        "我女儿叫伊内丝，今年七岁。",
        "娘の名前はイネスで、七歳です。",
        "The deadline for the report is Friday, 14 November.",
    ],
)
def test_a_statement_is_carried_in_any_language_or_phrasing(sentence: str) -> None:
    assert is_statement(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["Wie heißt meine Tochter?", "我女儿叫什么名字？", "¿Cómo se llama mi hija?", "Thanks!"],
)
def test_a_question_in_any_script_is_not_carried(sentence: str) -> None:
    assert not is_statement(sentence)


def test_where_the_budget_is_short_what_the_user_told_of_others_gives_way_first() -> None:
    """The user's own statement outlives newer sentences that only tell of something else
    (a museum's hours, a train's time); the newest of those fills what is left."""
    said = [
        "I am allergic to peanuts.",
        "The museum opens at 9 on Mondays.",
        "The train to Sintra leaves at 10:15.",
        "The castle closes at 18:00 in winter.",
    ]
    stated = carry_statements(
        [], [user(s) for s in said], [], budget=22, count_text=lambda t: len(t) // 4
    )
    assert stated.statements == (
        "I am allergic to peanuts.",
        "The castle closes at 18:00 in winter.",
    )


def test_a_quoted_request_cut_by_the_cap_is_still_the_users_words() -> None:
    """Seen on the real llama-server: "Der Nutzer möchte: Der Nutzer fragte: “… sein …"."""
    shown = render_for_model(
        "## Goal\n- Der Nutzer fragte: \u201cErzähl mir etwas über sein \u2026\n"
    )
    assert "\nDer Nutzer fragte: \u201cErzähl" in shown
    assert "möchte" not in shown


def test_a_pasted_log_is_not_carried_as_facts_the_user_told():
    """A message of many lines (a log, a config) is the model's to summarize: its lines are
    not the user's told facts, and carrying them took a compacted request past the real
    vLLM's window. A fact told in a short message still is."""
    from engine.context.user_statements import carry_through

    log = "The log of that run:\n" + "\n".join(
        f"01:0{m}:07 worker-{m} shard {m} committed {m * 11} rows in {m + 40} ms" for m in range(5)
    )
    told = "The deadline for the report is Friday, 14 November."
    carried = carry_through([], [log, told])
    assert carried == [told]
