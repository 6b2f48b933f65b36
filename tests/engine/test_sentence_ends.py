"""Sentences end where each script ends them (issue 49): at 。！？ with no space after, at
the Devanagari danda and the Arabic question mark, and at . ! ? before a space; never inside
"z. B.", "e.g.", a decimal or a German day's ordinal ("am 14. November")."""

from __future__ import annotations

import pytest

from engine.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("我叫李明。我住在北京！你呢？好的", ["我叫李明。", "我住在北京！", "你呢？", "好的"]),
        ("私は東京に住んでいます。毎朝走ります。", ["私は東京に住んでいます。", "毎朝走ります。"]),
        ("मेरा नाम राम है। मैं दिल्ली में रहता हूँ।", ["मेरा नाम राम है।", "मैं दिल्ली में रहता हूँ।"]),
        ("اسمك ما هو؟ أنا أحمد.", ["اسمك ما هو؟", "أنا أحمد."]),
        ("My name is Alex. I use tabs!", ["My name is Alex.", "I use tabs!"]),
    ],
)
def test_a_text_splits_at_each_scripts_sentence_end(text: str, sentences: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == sentences


@pytest.mark.parametrize(
    "sentence",
    [
        "Ich mag Obst, z. B. Äpfel und Birnen.",
        "Bring fruit, e.g. apples or pears.",
        "The rate is 3.5 percent today.",
        "Wir fliegen am 14. November nach Lissabon.",
        "Dr. Silva sees me on Mondays.",
    ],
)
def test_an_abbreviation_a_decimal_or_an_ordinal_does_not_end_a_sentence(sentence: str) -> None:
    assert [s.text for s in split_sentences(sentence)] == [sentence]
