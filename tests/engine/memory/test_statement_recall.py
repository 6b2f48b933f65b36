"""The first pass's recall on 40 lasting first-person statements and its false suggestions on
40 sentences that must not become memory (resources/bench/memory_statements.toml, which
`python -m bench memory_statements` prints). Each suggestion quotes its exact sentence, and
text from a tool or the model is never read as the user's."""

from __future__ import annotations

import asyncio
import tomllib

import pytest

from engine.memory import Completion, MemoryService, ScanInput, run_scan
from engine.memory.statements import find_statements
from engine.memory.support import check_supported
from engine.messages import Message, ToolCall, assistant, tool_result, user
from engine.resources import resource_text

CASES = tomllib.loads(resource_text("bench", "memory_statements.toml"))
QUALIFY = [s for group in CASES["qualify"].values() for s in group]
REFUSE = [s for group in CASES["refuse"].values() for s in group]
# The thresholds reached (the pass before this round: 6 of 40, and 0 false).
MIN_RECALL = 40
MAX_FALSE = 0


def _suggested(sentence: str) -> bool:
    return any(f.sentence.text == sentence for f in find_statements(sentence))


def test_the_sets_hold_forty_sentences_each():
    assert len(QUALIFY) == 40 and len(REFUSE) == 40
    assert {"questions", "other_people", "negations", "hypotheticals"} == set(CASES["refuse"])


def test_the_first_pass_suggests_the_lasting_statements_and_none_of_the_others():
    missed = [s for s in QUALIFY if not _suggested(s)]
    wrong = [s for s in REFUSE if _suggested(s)]
    assert len(QUALIFY) - len(missed) >= MIN_RECALL, missed
    assert len(wrong) <= MAX_FALSE, wrong


@pytest.mark.parametrize("sentence", QUALIFY)
def test_each_suggestion_quotes_its_sentence_and_restates_only_it(sentence: str):
    (found,) = find_statements(f"Thanks for that. {sentence} Anyway, next question.")
    assert found.sentence.text == sentence
    check_supported(found.statement, sentence)  # says nothing the sentence does not
    assert found.statement.startswith("The user"), found.statement


class _Silent:
    async def __call__(
        self, messages: list[Message], tools: list[dict[str, object]], max_tokens: int
    ) -> Completion:
        return Completion('{"memories": []}')


def test_a_tool_result_or_the_models_own_text_is_never_the_users_words(service: MemoryService):
    call = ToolCall("c1", "read_file", {"path": "notes.md"})
    chunk = [
        user("Please read my notes file."),
        assistant("Sure. My car is a blue 2014 Skoda. I live in Lisbon.", (call,)),
        tool_result(call, "I work night shifts at the hospital. My project deadline is March 3."),
        assistant("Your notes say you work night shifts. I am vegetarian."),
    ]
    report = asyncio.run(
        run_scan(
            ScanInput("conv", chunk),
            service=service,
            scopes=service.scopes("default", None),
            complete=_Silent(),
            count_text=lambda text: len(text.split()),
            window=4096,
        )
    )
    assert report.queued == [] and service.pending() == []
