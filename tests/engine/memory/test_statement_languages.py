"""Memory's first pass in eight languages besides English (issue 49): the user's and their
family's names, where they live and work, their things, habits, conditions, dated plans and
requests to remember become suggestions quoting the user's exact sentence; questions,
other people's facts, negations and hypotheticals do not. The sentences are the bench's
(resources/bench/memory_statements_languages.toml)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench.memory_languages import cases, suggested
from engine.memory import Completion, MemoryService, ScanInput, run_scan
from engine.memory.statements import STATEMENTS_ID
from engine.messages import Message, assistant, user

LANGUAGES = ["de", "fr", "es", "pt", "it", "ru", "zh", "ja"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_lasting_statements_become_suggestions_in_every_language(language: str) -> None:
    qualify = cases()[language]["qualify"]
    missed = [s for s in qualify if not suggested(s)]
    assert len(missed) * 10 <= len(qualify), missed  # at least nine in ten


@pytest.mark.parametrize("language", LANGUAGES)
def test_questions_others_negations_and_hypotheticals_give_none(language: str) -> None:
    wrong = [s for s in cases()[language]["refuse"] if suggested(s)]
    assert wrong == []


class _Model:
    """An extractor model that cannot call tools and answers prose."""

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        return Completion("Sure! Here is a summary of the conversation.")


@pytest.mark.parametrize(
    ("message", "quotes"),
    [
        ("Ich heiße Jonas Weber. Wie spät ist es?", ["Ich heiße Jonas Weber."]),
        ("我叫李明。我对花生过敏。今天天气怎么样？", ["我叫李明。", "我对花生过敏。"]),
    ],
)
def test_a_suggestion_quotes_the_users_own_sentence_and_waits_for_review(
    tmp_path: Any, message: str, quotes: list[str]
) -> None:
    service = MemoryService(tmp_path / "memory")
    asyncio.run(
        run_scan(
            ScanInput("conv", [user(message), assistant("OK.")]),
            service=service,
            scopes=service.scopes("default", None),
            complete=_Model(),
            count_text=lambda text: len(text),
            window=4096,
        )
    )
    waiting = service.pending()
    assert [s.quote for s in waiting] == quotes
    assert all(s.statement == s.quote and s.by == STATEMENTS_ID for s in waiting)


@pytest.mark.parametrize(
    "sentence",
    [
        "Bitte merk dir, dass ich kein Gluten vertrage.",
        "Запомни, что я не ем мясо.",
        "Ricorda che non mangio carne.",
    ],
)
def test_an_explicit_request_to_remember_keeps_the_negation_it_asks_to_remember(
    sentence: str,
) -> None:
    """As the English pass keeps "Remember that I do not eat meat.": the negation is the
    fact the user asks Brim to keep, not a fact denied."""
    assert suggested(sentence)


def test_a_german_habit_with_two_words_before_its_frequency_is_suggested() -> None:
    assert suggested("Ich trinke morgens immer grünen Tee.")
