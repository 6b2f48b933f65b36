"""The answers benchmark's questions and its scoring, apart from any model (the tests run the
scoring on written answers: tests/test_bench_answers.py).

Two sets:

- PLAIN: about thirty questions with known answers (capitals, small sums, common facts), each
  asked in a conversation of its own;
- the facts conversation: the user states some facts about themselves early, then asks
  ordinary questions about passages long enough that a small window compacts, then asks
  about each fact.

An answer is right when one of the question's accepted answers occurs in it as whole words,
after both are normalised (lower case, accents and punctuation gone, "1,200" read as 1200).
No accepted answer occurs in its own question, so a model that repeats the question scores
nothing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    text: str
    accepted: tuple[str, ...]


PLAIN: tuple[Question, ...] = (
    # The quick form asks the first QUICK_PLAIN of these: a mix of all three kinds.
    Question("What is the capital of France?", ("paris",)),
    Question("What is 7 plus 8?", ("15", "fifteen")),
    Question("How many days are there in a week?", ("7", "seven")),
    Question("What is the capital of Japan?", ("tokyo",)),
    Question("What is 6 times 7?", ("42", "forty two", "forty-two")),
    Question("Which planet is known as the Red Planet?", ("mars",)),
    Question("What is the capital of Italy?", ("rome",)),
    Question("What is 10 minus 3?", ("7", "seven")),
    Question("What do bees make?", ("honey",)),
    Question("What is the largest planet in our solar system?", ("jupiter",)),
    Question("How many legs does a spider have?", ("8", "eight")),
    Question("What is the capital of Germany?", ("berlin",)),
    Question("What is 12 times 12?", ("144",)),
    Question("Who wrote Romeo and Juliet?", ("shakespeare",)),
    Question("What is the capital of Spain?", ("madrid",)),
    Question("What is 100 divided by 4?", ("25", "twenty five", "twenty-five")),
    Question("What colour is the sky on a clear day?", ("blue",)),
    Question("What is the capital of Egypt?", ("cairo",)),
    Question("How many months are there in a year?", ("12", "twelve")),
    Question("Which animal says moo?", ("cow",)),
    Question("What is 9 plus 10?", ("19", "nineteen")),
    Question("What is the chemical formula of water?", ("h2o", "h 2 o", "h₂o")),
    Question("What is the capital of Canada?", ("ottawa",)),
    Question("How many hours are there in a day?", ("24", "twenty four", "twenty-four")),
    Question("What is the main language spoken in Brazil?", ("portuguese",)),
    Question("What is 3 squared?", ("9", "nine")),
    Question("On which continent is Kenya?", ("africa",)),
    Question("What is the fastest land animal?", ("cheetah",)),
    Question("At how many degrees Celsius does water freeze?", ("0", "zero")),
    Question("What is the opposite of hot?", ("cold",)),
)
QUICK_PLAIN = 12


@dataclass(frozen=True)
class Fact:
    statement: str  # what the user says early in the conversation
    question: str  # what the user asks about it after the filler
    accepted: tuple[str, ...]


FACTS: tuple[Fact, ...] = (
    Fact("My name is Priya.", "What is my name?", ("priya",)),
    Fact("My dog is called Biscuit.", "What is my dog called?", ("biscuit",)),
    Fact("I live in Porto.", "Which city do I live in?", ("porto",)),
    Fact("I work as a nurse.", "What is my job?", ("nurse",)),
    Fact("My locker code is 4817.", "What is my locker code?", ("4817",)),
    Fact("My favourite fruit is mango.", "What is my favourite fruit?", ("mango",)),
)
QUICK_FACTS = 4

# The ordinary turns between the facts and the questions: a passage and a request about it,
# about 150 tokens each, so that a 1,024-token window compacts before the questions.
PASSAGES: tuple[str, ...] = (
    "The lighthouse at the harbour mouth was built in 1864 from granite quarried inland; its "
    "lamp was first lit with whale oil, then paraffin, and since 1951 with electricity. Its "
    "keeper's cottage is now a small museum of ship models and tide tables.",
    "Sourdough bread rises with wild yeast and lactic bacteria kept in a starter of flour and "
    "water; the starter is fed daily, the dough rests overnight in a cool place, and the loaf "
    "bakes in a very hot oven, often under a lid for the first half hour.",
    "A bicycle chain wears by stretching: its pins and rollers lose metal, the pitch grows, "
    "and the chain starts to skip on worn sprockets. A chain checker tool tells when to "
    "replace it, usually every few thousand kilometres.",
    "The city library moved in 1998 into a former tobacco warehouse by the river; it keeps a "
    "map room on the top floor, a children's wing with a reading garden, and a basement "
    "archive of local newspapers going back two centuries.",
    "Tomatoes need six to eight hours of sun a day, deep watering two or three times a week "
    "and a stake or cage once the plants reach knee height; pinching the side shoots of "
    "vine varieties keeps the fruit large and the plant tidy.",
    "The night train leaves the capital at ten in the evening and reaches the coast at seven "
    "in the morning; sleeper cabins hold two or four berths, the dining car closes at "
    "midnight, and bicycles travel in the front van if booked ahead.",
    "Glass is mostly sand, soda ash and lime melted together at about 1,500 degrees; it is "
    "shaped while soft, then cooled slowly in an annealing oven so that stresses do not "
    "crack it later, a step that can take many hours for thick pieces.",
    "The marathon distance of 42.195 kilometres was fixed in 1921; runners usually take on "
    "water every five kilometres, and many train for four or five months, building a weekly "
    "long run up to about thirty kilometres before tapering.",
)
ASKS: tuple[str, ...] = (
    "Summarize that in one sentence.",
    "What is the main point of this?",
    "Tell me briefly what this says.",
    "What should I remember from this?",
)


@dataclass(frozen=True)
class Turn:
    text: str
    asks: Fact | None = None  # the fact this turn asks about (None: a statement or filler)


def facts_conversation(facts: int, filler: int) -> list[Turn]:
    """The first `facts` facts, stated one a turn; `filler` turns on a passage each; then a
    question about each fact, in the order stated."""
    chosen = FACTS[:facts]
    turns = [Turn(f.statement + " Please keep that in mind.") for f in chosen]
    turns += [Turn(f"{PASSAGES[i % len(PASSAGES)]} {ASKS[i % len(ASKS)]}") for i in range(filler)]
    turns += [Turn(f.question, asks=f) for f in chosen]
    return turns


def normalised(text: str) -> str:
    """Lower case, accents and punctuation gone, thousands separators gone, one space."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"(?<=\d)[,.\u00a0 ](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w₂]+", " ", text)  # ₂: H₂O as some models write it
    return " ".join(text.split())


def right(answer: str, accepted: tuple[str, ...]) -> bool:
    """Whether one of `accepted` occurs in `answer` as whole words, both normalised."""
    said = f" {normalised(answer)} "
    return any(f" {normalised(a)} " in said for a in accepted)
