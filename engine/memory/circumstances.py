"""The user's own lasting circumstances, said in so many words: the first pass's wider half.

engine/memory/statements.py reads names, habits with a marker ("I always …"), conditions and
requests to remember. This module reads the rest of what people say about themselves that
stays true for a while, each bound to the sentence as the user wrote it:

- family and pets by name: "My daughter's name is Ines.", "My son Tom is seven.",
  "I have a cat called Miso.";
- where the user lives and works: "I live in Lisbon.", "I'm based in Berlin.", "I work at
  the General Hospital.", "I work as a pharmacist.", "I am a nurse.", "My office is in …";
- the user's own things: "My car is a blue 2014 Skoda.", "I drive a red Fiat Panda.",
  "My favourite editor is Neovim.";
- standing habits: "I work night shifts", a present-tense "I …" with a frequency ("every
  morning", "on Sundays", "three times a week");
- dates the user gives for their own plans: "My project deadline is March 3.", "I'm moving
  to Porto in September." (a calendar date or month, never "tomorrow": a relative date is
  wrong by the time memory is read).

None of them reads a sentence that is hypothetical, negated, reported ("my son says I …"),
in the past ("I lived in …", "My exam was on …"), or about someone else ("My colleague lives
in Lisbon", "My sister's car is …", "My daughter wants a puppy"): the caller has already
refused questions and quoted speech.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from engine.memory.wording import HYPOTHETICAL, is_content, negated_before, read, reported_before

CircumstanceKind = Literal["family", "place", "thing", "habit", "date"]


def _words(text: str) -> frozenset[str]:
    """A word list written as prose, one set."""
    return frozenset(text.split())


@dataclass(frozen=True)
class Circumstance:
    kind: CircumstanceKind
    topic: str  # a few words naming its subject: "daughter", "car", "project deadline"


_FAMILY = (
    r"wife|husband|partner|son|daughter|kids?|child|children|brother|sister|mother|mom|mum|"
    r"father|dad|girlfriend|boyfriend|fianc[eé]e?|grandmother|grandfather|grandma|grandpa|"
    r"aunt|uncle|cousin|niece|nephew|stepson|stepdaughter|baby|dog|cat|puppy|kitten|pet|horse"
)
_AGE = r"(?:(?i:older|younger|little|big|eldest|oldest|youngest|elder|baby|twin)\s+)?"
_NAME = r"(?P<name>[A-Z][\w'’-]+)"
_NOT_NAMES = _words("I The A An He She It They We You My Our His Her")
_RELATION_NAMED = (
    re.compile(
        rf"\b(?i:my)\s+{_AGE}(?P<who>(?i:{_FAMILY}))(?:['’]s\s+(?i:name)\s+(?i:is)|"
        rf"\s+(?i:is\s+called|is\s+named|goes\s+by))\s+{_NAME}"
    ),
    re.compile(
        rf"\b(?i:my)\s+{_AGE}(?P<who>(?i:{_FAMILY})),?\s+{_NAME},?\s+"
        r"(?i:is|turns|works|lives|goes|has|studies|loves|likes)\b"
    ),
    re.compile(
        rf"\bI\s+(?i:have|own)\s+(?i:a|an|one|two|three|four)\s+{_AGE}"
        rf"(?P<who>(?i:{_FAMILY}))s?\s+(?i:called|named)\s+{_NAME}"
    ),
)

_AM = r"(?:['’]m|\s+am)"
_PROFESSIONS = (
    r"nurse|doctor|teacher|student|engineer|developer|programmer|designer|lawyer|accountant|"
    r"pharmacist|scientist|researcher|writer|journalist|consultant|freelancer|architect|chef|"
    r"cook|carpenter|electrician|plumber|mechanic|farmer|musician|artist|photographer|"
    r"translator|librarian|paramedic|firefighter|pilot|driver|dentist|vet|veterinarian|"
    r"surgeon|physician|therapist|psychologist|professor|lecturer|tutor|analyst|administrator|"
    r"sysadmin|manager|director|founder|owner|retiree|pensioner"
)
_PLACE = re.compile(
    rf"\bI(?:\s+(?i:live|reside)\s+(?i:in|near|at|on|outside|by)|{_AM}\s+(?i:based|located)"
    rf"\s+(?i:in|near|at)|{_AM}\s+(?i:from)|\s+(?i:come\s+from|grew\s+up\s+in)|"
    rf"\s+(?i:work)\s+(?i:at|for|in|as|with|on\s+the|from|nights?|night\s+shifts?|"
    r"day\s+shifts?|shifts|weekends|part[- ]time|full[- ]time|remotely|evenings|mornings)|"
    rf"{_AM}\s+(?i:an?)\s+(?:[\w-]+\s+){{0,2}}(?i:{_PROFESSIONS})s?)\b"
)
_PLACES = r"office|home|house|flat|apartment|workplace|school|university|studio|lab|clinic"
_MY_PLACE = re.compile(rf"\b(?i:my)\s+(?P<what>(?i:{_PLACES}))\s+(?i:is)\s+(?i:in|on|at|near)\b")

_THINGS = (
    r"car|bike|bicycle|motorbike|motorcycle|scooter|laptop|computer|pc|desktop|phone|tablet|"
    r"keyboard|monitor|camera|watch|boat|van|truck|guitar|piano|house|flat|apartment|"
    r"dog|cat|os|shell|editor|distro"
)
_MY_THING = re.compile(
    r"\b(?i:my)\s+(?:(?i:main|work|home|old|new|current|personal|own|daily)\s+)?"
    rf"(?P<what>(?i:{_THINGS}))\s+(?i:is)\s+(?:(?i:a|an|the|called|named)\b|[A-Z0-9])"
)
_FAVOURITE = re.compile(r"\b(?i:my)\s+(?i:favou?rite)\s+(?P<what>[\w-]+(?:\s+[\w-]+)?)\s+is\b")
_I_OWN = re.compile(
    r"\bI\s+(?i:drive|own|ride)\s+(?i:an?)\s+|"
    rf"\bI\s+(?i:have)\s+(?i:an?)\s+(?:[\w-]+\s+){{0,3}}(?P<what>(?i:{_THINGS}))\b"
)

_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_FREQUENCY = re.compile(
    rf"\b(?:(?:every|each)\s+(?:other\s+)?(?:day|morning|afternoon|evening|night|week|weekday|"
    rf"weekend|month|year|{_DAYS})|on\s+(?:(?:{_DAYS})s|weekends|weekdays)|"
    r"(?:once|twice|three\s+times|four\s+times|\d+\s+times)\s+a\s+(?:day|week|month|year)|"
    r"daily|weekly|nightly|monthly|night\s+shifts?|day\s+shifts?|in\s+the\s+(?:mornings|"
    r"evenings)|at\s+weekends)\b",
    re.IGNORECASE,
)
_ADVERBS = r"(?:(?i:also|really|still|just|only|usually|normally|often|mostly)\s+)*"
_I_VERB = re.compile(rf"\bI\s+{_ADVERBS}(?P<verb>[a-z]+)\b")
_NOT_PRESENT = _words(
    """am was were will would shall should can could may might must did does had has
    went ran came took saw got made said told thought felt left kept met paid sent spent
    slept stood sat wrote drove rode bought brought caught taught found lost began used
    tried"""
)

_MONTHS = (
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DATE = re.compile(
    rf"\b(?:(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|"
    rf"(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
    rf"(?i:in|by|until|from|before|after)\s+(?:(?i:early|mid|late)[- ]?)?(?:{_MONTHS})\b|"
    r"\d{4}-\d{2}-\d{2}\b)"
)
_PLANS = (
    r"deadline|flight|exam|exams|interview|appointment|surgery|operation|wedding|birthday|"
    r"anniversary|holiday|holidays|vacation|trip|launch|release|presentation|talk|demo|"
    r"defen[cs]e|move|lease|contract|visa|conference|check-?up|course|semester|leave|"
    r"due\s+date|start\s+date|last\s+day|first\s+day"
)
_MY_PLAN = re.compile(
    rf"\b(?i:my)\s+(?P<what>(?:[\w-]+\s+){{0,2}}?(?i:{_PLANS}))\s+(?:[\w-]+\s+){{0,3}}?"
    r"(?i:is|falls|starts|ends|begins|is\s+due)\b"
)
_I_PLAN = re.compile(
    rf"\bI(?:{_AM}\s+(?P<ing>[a-z]+ing)|\s+(?i:start|begin|leave|fly|travel|move|return|"
    r"retire|graduate|finish|arrive|go))\b"
)
# What holds for now, not for long: no memory.
_TRANSIENT = re.compile(
    r"\b(?:today|tonight|now|right\s+now|at\s+the\s+moment|yesterday|tomorrow|this\s+"
    r"(?:morning|afternoon|evening|week)|broken|dead|crashed|slow|lost|stolen|missing)\b",
    re.IGNORECASE,
)
# Aspect that says it is over: "no longer", "used to", "quit", "anymore".
_OVER = frozenset({"used_to", "no_longer", "anymore", "quit", "gave_up", "cease", "formerly",
                   "previously"})  # fmt: skip


def find_circumstance(text: str) -> Circumstance | None:
    """The lasting circumstance one sentence states of the user, or None."""
    if HYPOTHETICAL.search(text) or _TRANSIENT.search(text):
        return None
    reading = read(text)
    if reading.marks_of("negation") or any(m.group in _OVER for m in reading.marks_of("aspect")):
        return None
    return _relation(text) or _place(text) or _thing(text) or _plan(text) or _habit(text)


def _own(text: str, at: int) -> bool:
    """The sentence speaks of the user from `at` on: nothing negated or reported before."""
    return not (negated_before(text, at) or reported_before(text, at))


def _relation(text: str) -> Circumstance | None:
    for pattern in _RELATION_NAMED:
        match = pattern.search(text)
        if match and match.group("name") not in _NOT_NAMES and _own(text, match.start()):
            return Circumstance("family", match.group("who").casefold())
    return None


def _place(text: str) -> Circumstance | None:
    match = _PLACE.search(text)
    if match is not None and _own(text, match.start()):
        home = re.search(r"live|reside|based|located|from|grew", match.group(0), re.IGNORECASE)
        return Circumstance("place", "home" if home else "work")
    match = _MY_PLACE.search(text)
    if match is not None and _own(text, match.start()):
        return Circumstance("place", match.group("what").casefold())
    return None


def _thing(text: str) -> Circumstance | None:
    for pattern in (_MY_THING, _FAVOURITE):
        match = pattern.search(text)
        if match is not None and _own(text, match.start()) and not _about_others(text, match):
            return Circumstance("thing", match.group("what").casefold())
    match = _I_OWN.search(text)
    if match is not None and _own(text, match.start()):
        return Circumstance("thing", (match.group("what") or "vehicle").casefold())
    return None


def _plan(text: str) -> Circumstance | None:
    if _DATE.search(text) is None:
        return None
    match = _MY_PLAN.search(text)
    if match is not None and _own(text, match.start()) and not _about_others(text, match):
        return Circumstance("date", " ".join(match.group("what").casefold().split()))
    match = _I_PLAN.search(text)
    if match is not None and _own(text, match.start()):
        return Circumstance("date", "plans")
    return None


def _habit(text: str) -> Circumstance | None:
    match = _I_VERB.search(text)
    if match is None or not _FREQUENCY.search(text, match.end()):
        return None
    verb = match.group("verb")
    if verb in _NOT_PRESENT or verb.endswith("ed") or not _own(text, match.start()):
        return None
    words = read(text[match.end() :]).words
    if verb == "have" and words and (words[0] in _NOT_PRESENT or words[0].endswith(("ed", "en"))):
        return None  # "I have had coffee every morning": what has been, not a habit
    rest = [w for w in words if is_content(w)]
    return Circumstance("habit", " ".join(rest[:2]) or verb)


def _about_others(text: str, match: re.Match[str]) -> bool:
    """Someone else's thing: "my sister's car", "my boss's deadline"."""
    return bool(read(text[match.start() : match.end()]).about)
