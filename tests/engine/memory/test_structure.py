"""The support check compares structure, not bags of words: order around the words that
order, negations and framing words over the same words, conditions, aspect and who it is
about; a question never becomes a fact. Faithful restatements still pass."""

from __future__ import annotations

import pytest

from engine.memory.errors import MemoryRefused
from engine.memory.support import check_supported
from tests.engine.memory.misrepresentations import FAITHFUL, REVERSED, TWISTS, USER_SENTENCES


def _after(quote: str) -> str:
    """What follows the quote in the user's sentence (a "?" for a question quoted without it)."""
    for sentence in USER_SENTENCES:
        if sentence.startswith(quote):
            return sentence[len(quote) :]
    return ""


@pytest.mark.parametrize(("statement", "quote"), REVERSED, ids=[s for s, _ in REVERSED])
def test_a_reversed_statement_is_refused(statement: str, quote: str):
    with pytest.raises(MemoryRefused, match="other way round"):
        check_supported(statement, quote)


@pytest.mark.parametrize("twist", TWISTS, ids=[t.kind for t in TWISTS])
def test_a_misrepresentation_of_the_users_sentence_is_refused(twist):  # type: ignore[no-untyped-def]
    assert any(s.startswith(twist.quote) for s in USER_SENTENCES)
    with pytest.raises(MemoryRefused):
        check_supported(twist.statement, twist.quote, after=_after(twist.quote))


@pytest.mark.parametrize(("statement", "quote"), FAITHFUL, ids=[s for s, _ in FAITHFUL])
def test_a_faithful_restatement_still_passes(statement: str, quote: str):
    check_supported(statement, quote)


@pytest.mark.parametrize("sentence", USER_SENTENCES)
def test_a_sentence_supports_itself_unless_it_asks(sentence: str):
    if sentence.endswith("?"):
        with pytest.raises(MemoryRefused, match="question"):
            check_supported(sentence, sentence)
    else:
        check_supported(sentence, sentence)


@pytest.mark.parametrize(
    ("statement", "quote", "why"),
    [
        ("User squashes commits.", "Should I squash my commits", "question"),
        ("User wants tabs.", "Do you think tabs are better", "question"),
        ("User always uses tabs.", "I use tabs.", "adds 'always'"),
        ("User loves tabs.", "I use tabs.", "adds 'loves'"),
        ("User must use tabs.", "I use tabs.", "adds 'must'"),
        ("User never uses tabs.", "I use tabs.", "adds 'never'"),
        ("User hates tabs.", "I use tabs.", "adds 'hates'"),
        ("User prefers tabs.", "Sarah prefers tabs.", "sarah"),
        ("User uses tabs.", "When I'm on the laptop I use tabs.", "'when'"),
        ("When on the laptop, user uses tabs.", "When I'm on the laptop at work I use tabs.",
         "condition"),
        ("User uses tabs.", "I quit using tabs.", "'quit'"),
        ("User stopped using tabs.", "I quit using tabs.", "adds 'stopped'"),
    ],
)  # fmt: skip
def test_each_refusal_says_what_the_statement_changed(statement: str, quote: str, why: str):
    after = "?" if why == "question" else ""
    with pytest.raises(MemoryRefused, match=why):
        check_supported(statement, quote, after=after)
