"""Memory's first pass in other languages than English, from one table per language.

The English pass (engine/memory/statements.py) reads English grammar. A user who writes
German, French, Spanish, Portuguese, Italian, Russian, Chinese or Japanese states the same
lasting facts (their and their family's names, where they live and work, their things,
standing habits, dated plans, requests to remember), so each language has a table under
resources/language/memory/ (see de.toml): patterns per kind, and patterns that refuse a
sentence (a negated fact, a hypothetical, someone else's words, a question). A sentence of
the user's own that matches a kind and no refusal becomes a suggestion whose quote and
statement are that very sentence: the user's words, quote-bound as every suggestion is,
with no restatement the support check would have to read in that language.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from engine.resources import ResourceMissing, resource_text

KINDS = ("name", "family", "place", "thing", "habit", "condition", "date", "remember")
# A question in any script: never a fact.
_QUESTION = re.compile(r"[?？؟¿]")
MAX_SENTENCE_CHARS = 300


@dataclass(frozen=True)
class Table:
    kinds: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    refuse: tuple[re.Pattern[str], ...]


@cache
def table(language: str) -> Table | None:
    """The first-pass table of `language`, or None where Brim has none."""
    if not re.fullmatch(r"[a-z]{2}", language):
        return None
    try:
        data = tomllib.loads(resource_text("language", "memory", f"{language}.toml"))
    except ResourceMissing:
        return None
    kinds = tuple(
        (kind, tuple(re.compile(p, re.IGNORECASE) for p in data["kinds"].get(kind, [])))
        for kind in KINDS
    )
    refuse = tuple(re.compile(p, re.IGNORECASE) for p in data["refuse"]["patterns"])
    return Table(kinds, refuse)


REFUSED = "refused"


def kind_of(sentence: str, language: str) -> str | None:
    """The kind of lasting fact `sentence` states by `language`'s table; REFUSED where the
    table refuses it (a negation, a hypothetical, a question …); None where it says
    nothing of it."""
    found = table(language)
    text = sentence.strip()
    if found is None:
        return None
    if len(text) > MAX_SENTENCE_CHARS or _QUESTION.search(text):
        return REFUSED
    kinds = dict(found.kinds)
    # An explicit request to remember keeps what it asks for, a negation inside it included
    # ("Merk dir, dass ich kein Gluten vertrage."), as the English pass keeps "Remember that
    # I do not eat meat."
    if any(p.search(text) for p in kinds["remember"]):
        return "remember"
    if any(p.search(text) for p in found.refuse):
        return REFUSED
    for kind, patterns in found.kinds:
        if any(p.search(text) for p in patterns):
            return kind
    return None
