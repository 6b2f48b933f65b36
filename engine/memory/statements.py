"""The deterministic memory pass: the user's explicit first-person statements, no model.

Small local models rarely call tools, and a paraphrase of theirs is rightly refused by the
support check, so on the models most people run the extractor alone suggests nothing. This
pass reads the authenticated user messages (engine/memory/sources.py: never a tool result,
the model's text or Brim's own) sentence by sentence and keeps the ones that state
something meant to last, in so many words:

- a name: "My name is Alex.", "Call me Sam.", "I go by Sam.";
- a standing habit or preference with the user as subject: "I always / never / usually /
  normally / typically / generally / prefer / 'd rather …";
- a request to remember: "Remember that …", "Please remember …", "Keep in mind that …",
  "Don't forget that …";
- the user's own lasting circumstances (engine/memory/circumstances.py): family and pets by
  name, where they live and work, their things, standing habits ("I work night shifts"),
  and the dates they give for their own plans ("My project deadline is March 3.").

A sentence that asks ("Do I always use tabs?"), negates the marker ("I don't always use
tabs"), reports someone else ("my colleague always uses tabs", "you said I always …"),
quotes speech or is hypothetical ("if I …", "imagine I …", "I might …") gives none.

Each statement becomes a suggestion whose quote is the exact sentence, so it is
authenticated as any quote is; its statement is the same sentence in the third person
("The user always uses tabs, never spaces."), checked by the support check like any
other, or the sentence itself when the restatement would not pass. The suggestions go
through the same checks and queue as the model's; a model suggestion for the same sentence
replaces it (engine/memory/extractor.py), so nothing is suggested twice.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Literal, cast

from engine.language import detect_language, has_english_words
from engine.memory.circumstances import find_circumstance
from engine.memory.errors import MemoryRefused
from engine.memory.first_pass_tables import REFUSED, kind_of
from engine.memory.layout import subject_slug
from engine.memory.queue import STATEMENTS_ID as STATEMENTS_ID  # where it was always read
from engine.memory.sources import SourceSet
from engine.memory.support import UnsupportedStatement, check_supported
from engine.memory.tools import MemoryToolState, plan_fact, queue_fact
from engine.memory.wording import (
    HYPOTHETICAL,
    IMAGINED_ONLY,
    SPEECH,
    is_content,
    is_question,
    negated_before,
    read,
    reported_before,
)
from engine.sentences import Sentence, split_sentences

log = logging.getLogger(__name__)

MAX_SENTENCE_CHARS = 300
# The tables tried on a sentence too short to tell which Latin-script language it is.
LATIN_TABLES = ("de", "fr", "es", "pt", "it")

StatementKind = Literal[
    "name", "preference", "remember", "condition", "family", "place", "thing", "habit", "date"
]


def _words(text: str) -> frozenset[str]:
    """A word list written as prose, one set."""
    return frozenset(text.split())


@dataclass(frozen=True)
class Found:
    kind: StatementKind
    sentence: Sentence  # the exact sentence: the quote
    statement: str  # what the suggestion says
    subject: str  # its file name


_NAME = r"(?P<name>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)"
_NAMES = (
    (re.compile(rf"\b(?i:my name(?:'s|’s| is))\s+{_NAME}"), "The user's name is {name}."),
    (re.compile(rf"(?:^|[,;:]\s*|\b(?i:please|just|you can)\s+)(?i:call me)\s+{_NAME}"),
     "The user wants to be called {name}."),
    (re.compile(rf"\bI (?i:go by)\s+{_NAME}"), "The user goes by {name}."),
)  # fmt: skip
_NOT_NAMES = _words("I The A An Maybe Later Back Anytime Tomorrow Today Please Again Whatever")
_ADVERBS = r"(?:(?i:also|really|generally|still|just|only|do|personally|almost|nearly)\s+)*"
_PREFERENCE = re.compile(
    rf"\bI(?P<trigger>\s+{_ADVERBS}(?i:always|never|usually|normally|typically|generally|"
    r"prefer|would rather|would prefer)|['’]d\s+(?i:rather|prefer))\b"
)
# A lasting condition of the user's own: an allergy, an intolerance, a diet.
_CONDITION = re.compile(
    rf"\bI(?:['’]m|\s+am)\s+{_ADVERBS}(?P<trigger>(?i:allergic|intolerant|sensitive)\s+to|"
    r"(?i:lactose|gluten)\s+intolerant|(?i:vegetarian|vegan|diabetic|coeliac|celiac))\b"
)
_REMEMBER = re.compile(
    r"(?:^|[,;:—–]\s*)(?:(?i:please|also|and|oh|so|ok|okay|btw|always)[,\s]+)*"
    r"(?P<verb>(?i:remember|keep in mind|don['’]t forget|do not forget|never forget|note))"
    r"(?:\s+(?i:that)\b|:|,)\s*(?P<rest>\S.*)$|"
    r"(?:^|[,;:—–]\s*)(?:(?i:please|also|and|oh|so|ok|okay|btw|always)[,\s]+)*"
    r"(?P<verb2>(?i:remember|keep in mind|don['’]t forget|do not forget|never forget))"
    r"\s+(?P<rest2>\S.*)$"
)
_QUOTED_SPEECH = re.compile(r"[\"“”«»]")
# Verbs too common to name a subject by.
_PLAIN_VERBS = _words(
    """use uses used using get gets got make makes made go goes went work works want wants
    like likes need needs keep keeps put puts take takes"""
)


def find_statements(text: str) -> list[Found]:
    """The durable first-person statements of one user message, in order: by the English
    patterns below, or by the table of the language the message is written in
    (engine/memory/first_pass_tables.py), quoting the sentence as it is."""
    language = detect_language([text])
    if language != "en":
        return _by_table(text, language)
    out: list[Found] = []
    for sentence in split_sentences(text):
        found = _statement(sentence, text[sentence.end :])
        if found is None and not has_english_words(sentence.text):
            # Too short to tell its language ("Me llamo Jonas."): the tables of the
            # languages written in the same script may read it.
            found = next(iter(_by_tables(sentence)), None)
        if found is not None:
            out.append(found)
    return out


def _by_table(text: str, language: str) -> list[Found]:
    """By the table of `language`, then (a short sentence's language is a guess) by the
    other tables of its script."""
    out: list[Found] = []
    order = (language, *(t for t in LATIN_TABLES if t != language))
    for sentence in split_sentences(text):
        out.extend(_by_tables(sentence, order if language in LATIN_TABLES else (language,)))
    return out


def _by_tables(sentence: Sentence, languages: tuple[str, ...] = LATIN_TABLES) -> list[Found]:
    for language in languages:
        kind = kind_of(sentence.text, language)
        if kind == REFUSED:
            return []  # "Vielleicht … im Mai": not Italian's "mai" (never) either
        if kind is not None:
            return [Found(cast(StatementKind, kind), sentence, sentence.text, kind)]
    return []


def _statement(sentence: Sentence, after: str) -> Found | None:
    text = sentence.text
    if (
        len(text) > MAX_SENTENCE_CHARS
        or "?" in text
        or is_question(text, after)
        or _QUOTED_SPEECH.search(text)
    ):
        return None
    return (
        _name(sentence)
        or _remember(sentence, after)
        or _preference(sentence, after)
        or _condition(sentence)
        or _circumstance(sentence)
    )


def _name(sentence: Sentence) -> Found | None:
    text = sentence.text
    for pattern, template in _NAMES:
        match = pattern.search(text)
        if match is None:
            continue
        name = match.group("name")
        if name.split()[0] in _NOT_NAMES or negated_before(text, match.start()):
            return None
        if HYPOTHETICAL.search(text) or reported_before(text, match.start()):
            return None
        return _found("name", sentence, template.format(name=name), "name")
    return None


def _preference(sentence: Sentence, after: str) -> Found | None:
    text = sentence.text
    match = _PREFERENCE.search(text)
    if match is None or HYPOTHETICAL.search(text):
        return None
    if negated_before(text, match.start("trigger")) or reported_before(text, match.start()):
        return None
    rest = read(text[match.end() :])
    if rest.words and rest.words[0] in SPEECH:
        return None  # "I never said …"
    if rest.about:
        return None  # "I always use tabs like my colleague": whose habit is it?
    content = [w for w in rest.words if is_content(w)]
    if not content:
        return None
    return _found("preference", sentence, third_person(text), _subject(content, "preferences"))


def _condition(sentence: Sentence) -> Found | None:
    """ "I am allergic to peanuts.", "I'm vegetarian." """
    text = sentence.text
    match = _CONDITION.search(text)
    if match is None or HYPOTHETICAL.search(text):
        return None
    if negated_before(text, match.start()) or reported_before(text, match.start()):
        return None
    content = [w for w in read(text[match.start("trigger") :]).words if is_content(w)]
    if not content:
        return None
    return _found("condition", sentence, third_person(text), _subject(content, "health"))


def _circumstance(sentence: Sentence) -> Found | None:
    """ "I live in Lisbon.", "My car is a blue 2014 Skoda." (engine/memory/circumstances.py)"""
    found = find_circumstance(sentence.text)
    if found is None:
        return None
    try:
        subject = subject_slug(found.topic)
    except MemoryRefused:
        subject = found.kind
    return _found(found.kind, sentence, third_person(sentence.text), subject)


def _remember(sentence: Sentence, after: str) -> Found | None:
    text = sentence.text
    match = _REMEMBER.search(text)
    if match is None:
        return None
    verb = match.group("verb") or match.group("verb2")
    rest = match.group("rest") or match.group("rest2")
    start = match.start("verb") if match.group("verb") else match.start("verb2")
    if verb.casefold() == "note" and not re.match(r"\s+that\b", text[match.end("verb") :], re.I):
        return None  # "Note the file …" is an instruction for now, not a fact
    negated = "forget" not in verb.casefold() and negated_before(text, start)
    if negated or IMAGINED_ONLY.search(text) or len(rest.split()) < 2:
        return None
    if re.match(r"to\s", rest, re.IGNORECASE):
        return None  # "remember to close the door": a task for now, not a fact
    if is_question(rest, after):
        return None
    content = [w for w in read(rest).words if is_content(w)]
    if not content:
        return None
    statement = third_person(rest)
    return _found("remember", sentence, statement, _subject(content, "reminders"))


def _found(kind: StatementKind, sentence: Sentence, statement: str, subject: str) -> Found:
    """The statement as restated, or the sentence itself when the restatement would not
    pass the support check (it always should; the sentence itself always does)."""
    statement = _sentence_case(statement)
    try:
        check_supported(statement, sentence.text)
    except UnsupportedStatement:
        log.debug("memory: the restatement of %r did not pass; quoting it as is", sentence.text)
        statement = sentence.text
    return Found(kind, sentence, statement, subject)


def _subject(content: list[str], fallback: str) -> str:
    words = [w for w in content if w not in _PLAIN_VERBS] or content
    try:
        return subject_slug(" ".join(words[:3]))
    except MemoryRefused:
        return fallback


# -- the third person -----------------------------------------------------------------------

_FIRST_PERSON = (
    (re.compile(r"\bI(?:'m|’m| am)\b"), "the user is"),
    (re.compile(r"\bI(?:'ve|’ve)\b"), "the user has"),
    (re.compile(r"\bI(?:'d|’d)\b"), "the user would"),
    (re.compile(r"\bI(?:'ll|’ll)\b"), "the user will"),
    (re.compile(r"\b(?i:my|mine)\b"), "the user's"),
    (re.compile(r"\b(?i:myself)\b"), "the user"),
    (re.compile(r"\b(?i:me)\b"), "the user"),
)
_SUBJECT_I = re.compile(
    r"\bI\s+((?:(?i:always|never|usually|normally|typically|generally|also|really|still|"
    r"just|only|often|sometimes|rarely|mostly|personally)\s+)*)([A-Za-z]+(?:n['’]t)?)\b"
)
_UNCHANGED = _words("can could will would should shall must may might was did cannot can't won't")
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "don’t": "doesn’t",
              "go": "goes", "be": "is", "were": "was"}  # fmt: skip


def third_person(text: str) -> str:
    """A first-person sentence about the user, said of them: "I always use tabs" → "the
    user always uses tabs", "my name" → "the user's name"."""
    text = _SUBJECT_I.sub(lambda m: f"the user {m.group(1)}{_agree(m.group(2))}", text)
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)
    return text


def _agree(verb: str) -> str:
    """The verb after "I", agreeing with "the user"."""
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _UNCHANGED or low.endswith(("n't", "n’t")) or not low.isalpha():
        return verb
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def _sentence_case(text: str) -> str:
    text = " ".join(text.split()).strip()
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    if text and text[-1] not in ".!":
        text = text.rstrip(",;:") + "."
    return text


# -- queueing ---------------------------------------------------------------------------------


def queue_statements(state: MemoryToolState, sources: SourceSet) -> list[str]:
    """Queue each statement of the pass's user messages through the same checks as any
    suggestion; returns the IDs queued. A statement already waiting, already in memory, or
    refused (a secret, a sentence the user corrected) is skipped quietly."""
    queued: list[str] = []
    for source in sources:
        for found in find_statements(source.message.content):
            subject = _free_subject(state, found.subject)
            if subject is None:
                continue
            try:
                plan = plan_fact(
                    state,
                    action="create",
                    scope="global",
                    subject=subject,
                    content=found.statement,
                    quote=found.sentence.text,
                    source=source.id,
                    require_view=False,
                )
                queued.append(queue_fact(state, plan).id)
            except MemoryRefused as exc:
                log.debug("memory: statement %r not queued: %s", found.sentence.text, exc)
    return queued


def _free_subject(state: MemoryToolState, subject: str) -> str | None:
    """`subject`, or `subject-2` … when an entry or a waiting suggestion has it."""
    scope = state.scope("global")
    waiting = {s.subject for s in state.service.queue.pending() if s.scope == scope.key}
    for n in range(1, 10):
        candidate = subject if n == 1 else f"{subject}-{n}"
        if candidate not in waiting and state.entry(scope, candidate) is None:
            return candidate
    return None
