"""The small-models benchmark's script and scoring, apart from any model (the tests run the
scoring on canned transcripts: tests/test_bench_small_models.py).

A fact is present in a request when every one of its key words is in what the model was
sent before the question; it is answered when every answer key is in the answer. An answer
is in summary voice when it carries a checkpoint's artefacts: a heading (markdown, or a
checkpoint section's title alone on its line), a "(none)" placeholder or a left-out marker,
the third person of the summarizer ("The user is asking ..."), a whole answer in brackets,
or the summarizer prompt's transcript markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.context.constants import SUMMARY_SCHEMA


@dataclass(frozen=True)
class Fact:
    statement: str  # what the user says
    question: str  # what the user asks about it later (none of the request keys in it)
    request_keys: tuple[str, ...]  # all of them in the request: the fact reached the model
    answer_keys: tuple[str, ...]  # all of them in the answer: the model answered it
    # A lasting fact about the user in so many words (a name, an allergy), which memory's
    # deterministic pass suggests on any model; the trip's plans are the conversation's.
    explicit: bool = False


FACTS: tuple[Fact, ...] = (
    Fact(
        "I am planning a trip to Lisbon with my sister in May.",
        "Which city am I planning to visit, and with whom?",
        ("lisbon", "sister"),
        ("lisbon", "sister"),
    ),
    Fact(
        "My budget for the whole trip is 1200 euros.",
        "What is my budget for the whole trip?",
        ("1200",),
        ("1200",),
    ),
    Fact(
        "I am allergic to peanuts, so keep that in mind for restaurants.",
        "Which food must I avoid?",
        ("peanut",),
        ("peanut",),
        explicit=True,
    ),
    Fact("My name is Alex.", "What is my name?", ("alex",), ("alex",), explicit=True),
    Fact(
        "I am arriving by train.",
        "How am I travelling there?",
        ("train",),
        ("train",),
    ),
    Fact(
        "I booked a hotel near Alfama.",
        "Which neighbourhood is my hotel in?",
        ("alfama",),
        ("alfama",),
    ),
)

# Ordinary questions between the statements: each carries a passage, so the window fills
# and the conversation compacts at least twice before the facts are asked about.
PASSAGES: tuple[str, ...] = (
    "The old tram 28 climbs from Martim Moniz through Graça and down to Estrela; it is "
    "crowded by mid-morning, and pickpockets work the busiest stops.",
    "Pastéis de nata are best warm, dusted with cinnamon; the bakeries in Belém bake them "
    "all day and the queue moves quickly.",
    "The Oceanarium holds one large central tank and four smaller habitats; the visit takes "
    "about two hours, and tickets are cheaper online.",
    "Sintra is forty minutes away by suburban train from Rossio station; the palaces open at "
    "half past nine and the hill roads are steep.",
    "Fado houses in the Bairro Alto start late, around nine in the evening, and most ask for "
    "a minimum spend on food and wine.",
    "The Jerónimos Monastery closes on Mondays; its cloister is two storeys of carved stone, "
    "and the church is free to enter.",
    "LX Factory is a former textile mill under the 25 de Abril bridge, now shops, a bookshop "
    "and restaurants, busiest on Sunday.",
    "Miradouros are viewpoints; the one at Senhora do Monte is the highest, and Santa Luzia "
    "looks over the river and the rooftops.",
)
ORDINARY_ASKS: tuple[str, ...] = (
    "In one sentence, what does this say?",
    "What is the main point here?",
    "Summarize that for me briefly.",
    "What should I remember from this?",
)

# The 20 ordinary questions asked after a compaction (and, for the floor, without one).
PLAIN_QUESTIONS: tuple[str, ...] = (
    "What is 12 times 12?",
    "What is 7 plus 8?",
    "What is 100 minus 37?",
    "What is half of 50?",
    "What is 9 times 6?",
    "Which city am I planning to visit?",
    "What is my name?",
    "How am I travelling there?",
    "What is my budget?",
    "Which food must I avoid?",
    "List three things to pack for a city trip.",
    "List three fruits.",
    "List the days of the week.",
    "Name three colours.",
    "List three things to do on a rainy day.",
    "Write one sentence about the sea.",
    "What is the capital of France?",
    "Give me a word that rhymes with cat.",
    "What is 3 squared?",
    "Say hello in Portuguese.",
)


@dataclass(frozen=True)
class Turn:
    text: str
    fact: int | None = None  # the index of the fact this turn states
    asks: int | None = None  # the index of the fact this turn asks about


# Which turn comes when: "F<n>" states fact n, "O<n>" is ordinary question n.
ORDER = ("F0", "O0", "F1", "O1", "O2", "F2", "O3", "F3", "O4", "O5", "F4", "O6", "F5", "O7")


def scripted_turns(passages_per_question: int = 1) -> list[Turn]:
    """20 turns: the six facts interleaved with eight ordinary questions on a passage (or on
    `passages_per_question` passages in a row, so that a larger window fills as a small one
    does), then a question about each fact."""
    turns: list[Turn] = []
    for step in ORDER:
        n = int(step[1:])
        if step[0] == "F":
            turns.append(Turn(FACTS[n].statement, fact=n))
        else:
            read = " ".join(PASSAGES[(n + k) % len(PASSAGES)] for k in range(passages_per_question))
            turns.append(Turn(f"{read} {ORDINARY_ASKS[n % len(ORDINARY_ASKS)]}"))
    turns.extend(Turn(f.question, asks=i) for i, f in enumerate(FACTS))
    return turns


def _norm(text: str) -> str:
    """Lower case, thousands separators and non-breaking spaces gone ("1,200" is 1200)."""
    return re.sub(r"(?<=\d)[,.\u00a0 ](?=\d{3}\b)", "", text.lower())


def fact_present(sent: Sequence[str], fact: Fact) -> bool:
    """Whether every key of `fact` is in the texts the model was sent before the question."""
    text = _norm("\n".join(sent))
    return all(key in text for key in fact.request_keys)


def fact_answered(answer: str, fact: Fact) -> bool:
    text = _norm(answer)
    return all(key in text for key in fact.answer_keys)


_TITLES = {title.lower() for _, title in SUMMARY_SCHEMA}
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\(none\)|earlier entr(?:y|ies) left out", re.IGNORECASE)
_THIRD_PERSON = re.compile(
    r"\bthe user(?:'s)? (?:is|was|has|had|wants|wanted|asked|asks|said|says|mentioned|"
    r"told|stated|plans|planned|would)\b",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"^\s*\[[^\]]{12,}\]?\s*$", re.DOTALL)
_MARKUP = re.compile(r"<<<|>>>|END TRANSCRIPT|BEGIN TRANSCRIPT", re.IGNORECASE)


_BOLD = re.compile(r"\*\*([^*\n]{2,40})\*\*")


def _section_title_line(line: str) -> bool:
    bare = line.strip().strip("#*•-:_ ").strip().lower()
    return bare in _TITLES


def _bold_title(answer: str) -> bool:
    return any(m.group(1).strip(" :").lower() in _TITLES for m in _BOLD.finditer(answer))


def summary_voice(answer: str) -> list[str]:
    """The checkpoint artefacts in an answer, by name (empty: it answers as itself)."""
    found: list[str] = []
    lines = answer.splitlines()
    if _HEADING.search(answer) or _bold_title(answer) or any(map(_section_title_line, lines)):
        found.append("heading")
    if _PLACEHOLDER.search(answer):
        found.append("placeholder")
    if _THIRD_PERSON.search(answer):
        found.append("the user is ...")
    if _BRACKETED.match(answer):
        found.append("bracketed")
    if _MARKUP.search(answer):
        found.append("transcript markup")
    return found


def _quotes_statement(quote: str, statement: str) -> bool:
    quote, statement = _norm(quote).strip().rstrip("."), _norm(statement).rstrip(".")
    return statement in quote or (len(quote) >= 8 and quote in statement)


EXPLICIT = tuple(f for f in FACTS if f.explicit)


def statements_queued(quotes: Iterable[str], facts: Sequence[Fact] = FACTS) -> int:
    """How many of `facts`' statements a queued suggestion quotes (each counted once)."""
    texts = list(quotes)
    return sum(any(_quotes_statement(q, f.statement) for q in texts) for f in facts)
