"""The user's first-person statements a task needs carried, and the user's retractions.

"I am planning a trip to Lisbon with my sister in May." "My budget for the whole trip is
1200 euros." "I am allergic to peanuts." A summarizer may drop any of these (a small one
usually does), and the user then meets an agent that forgot what they said in so many
words. So compaction carries them verbatim, mechanically (engine/context/stated.py); this
module only decides which sentences they are, and which later sentences take one back.

Wide on purpose: a statement carried that the task did not need costs a few tokens, one
dropped costs the user's trust. A sentence is carried when the user speaks about themselves
(I, we, my, our near its start), declares rather than asks (no question mark, no question
or request opening), and says something concrete (a number, a name, a date, a preference,
a constraint, or "my X is Y"). Hedges ("I think so", "I see") and requests about the
conversation ("I want to know …") are not statements. The narrower detector of memory
suggestions lives with memory (engine/memory/); this one is about the task.

Whether or not it says "I": "The deadline for the report is Friday, 14 November." is
something the user told, not asked, and is carried like "My deadline is …". And in every
language: a sentence the user writes in another language than English is carried whenever
it declares (no question mark of any script, long enough to say something), verbatim, with
no word list at all; the English detector above is kept for English only, where it adds
what a rule without words cannot (questions without a question mark, requests, hedges,
"my X is Y" replacing an older value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.language import detect_language
from engine.sentences import split_sentences

_WORD = re.compile(r"[A-Za-zÀ-ÿ0-9]+(?:['’][A-Za-z]+)?")


def _split(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SUBJECTS = _split("i i'm i've i'd i'll we we're we've we'd we'll my our im ive")
_QUESTION_OPENERS = _split("""
    what which who whom whose where when why how do does did is are am was were can could
    would will should shall may might have has any tell give show list explain write
    please remind help describe suggest recommend find make let
    """)
_HEDGES = re.compile(
    r"\b(?:i|we)\s+(?:(?:do\s+not|don't|dont)\s+)?(?:think|guess|wonder|wondered|see|mean|suppose|"
    r"agree|understand|hope|bet)\b"
    r"|\b(?:i|we)(?:'d|\s+would)?\s+(?:like|want|need)\s+to\s+(?:know|ask|understand|see)\b"
    r"|\b(?:i\s+am|i'm)\s+(?:asking|curious|wondering|sorry|back|done|here|confused|not\s+sure)\b"
    r"|\bi\s+was\s+wondering\b|\bi\s+have\s+(?:a|another|one\s+more)\s+question\b",
    re.IGNORECASE,
)
_CONCRETE = _split("""
    always never usually often rarely prefer prefers preferred rather like likes love loves
    hate hates dislike dislikes enjoy allergic allergy intolerant vegetarian vegan avoid
    can't cannot don't won't doesn't mustn't must only budget need needs want wants plan
    plans planning planned going visit visiting travel traveling travelling trip live
    lives living moved moving work works working study studying born name named called
    use uses using speak speaks have has own owns married allowed afford deadline due
    arrive arrives arriving arrived leave leaves leaving fly flying drive driving stay
    staying booked
    """)
# An English sentence without "I" or "my" that opens with one of these is small talk, not
# something the user told ("Thanks, that helps.", "Sounds good.").
_SMALL_TALK = _split("""
    thanks thank great ok okay sounds sound cool nice perfect sure yes yeah yep no nope hi
    hello hey good fine wow oh ah hmm lol awesome alright right that that's this it it's
    """)
# A question in any script: ? ？ ؟ ¿ ;(Greek) ՞(Armenian) at its end or opening.
_QUESTION_MARKS = "?？؟¿՞;"
# A fact told is a sentence, not a pasted table: longer ones are the model's to summarize.
MAX_TOLD_CHARS = 300
# Fewer characters than this of a script written without spaces say nothing to carry.
MIN_UNSPACED_CHARS = 4
_MONTHS_DAYS = _split("""
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight weekend
    """)
# "My budget for the whole trip is …": the possessed noun names the slot a later "my budget
# is …" replaces.
_SLOT = re.compile(
    r"\b(?:my|our)\s+([a-z]+)(?:\s+[a-z']+){0,5}?\s+(?:is|are|was|were|'s)\b", re.IGNORECASE
)
_CORRECTION = re.compile(
    r"\b(?:actually|instead|rather|correction|no\s+longer|any\s+more|anymore|changed|"
    r"change|now|not)\b|n't\b",
    re.IGNORECASE,
)
_FORGET = re.compile(
    r"\b(?:forget|ignore|disregard|scratch|drop|never\s+mind)\b"
    r"(?:\s+(?:about|that|what|the\s+part|everything))*"
    r"(?:\s+(?:i\s+(?:said|told\s+you|mentioned)|i\b|my\b|about\b))",
    re.IGNORECASE,
)
_COMMON = _split("""
    i i'm i've i'd i'll we my our the a an and or but so is are was were be been am to of in
    on at for with from by it this that not no actually instead rather now anymore also
    have has had do does did will would can could should just really very about
    said told mentioned forget ignore disregard never mind you me
    """)


def sentences(text: str) -> list[str]:
    """The sentences of a message, each as written, split as memory splits them."""
    return [s.text for s in split_sentences(text)]


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def is_question(sentence: str) -> bool:
    ws = _words(sentence)
    text = sentence.strip()
    if text.rstrip("\"'”’)」』）").endswith(tuple(_QUESTION_MARKS)) or text.startswith("¿"):
        return True
    return detect_language([sentence]) == "en" and bool(ws) and ws[0] in _QUESTION_OPENERS


def _speaks_of_self(ws: list[str]) -> bool:
    """A first-person subject among the first words: "I …", "Actually, my …", "In May we …"."""
    return any(w in _SUBJECTS for w in ws[:6])


def _concrete(sentence: str, ws: list[str]) -> bool:
    if any(ch.isdigit() for ch in sentence) or _SLOT.search(sentence):
        return True
    if any(w in _CONCRETE or w in _MONTHS_DAYS for w in ws):
        return True
    raw = _WORD.findall(sentence)
    # A name: a capitalised word that does not open the sentence and is not "I".
    return any(w[:1].isupper() and w.lower() not in _SUBJECTS for w in raw[1:])


def is_statement(sentence: str) -> bool:
    """Whether one sentence of a user message is something the user told, to carry."""
    if is_question(sentence) or is_retraction(sentence):
        return False
    if detect_language([sentence]) != "en":
        return len(sentence) <= MAX_TOLD_CHARS and _says_something(sentence)
    ws = _words(sentence)
    if len(ws) < 3 or _HEDGES.search(sentence):
        return False
    if _speaks_of_self(ws):
        return _concrete(sentence, ws)
    # Told, not about the user: "The deadline for the report is Friday, 14 November."
    if len(sentence) > MAX_TOLD_CHARS or ws[0] in _SMALL_TALK or len(ws) < 4:
        return False
    return _concrete(sentence, ws)


def told_only(sentence: str) -> bool:
    """An English statement that is not about the user ("The deadline for the report is
    Friday."): where the budget cannot hold every statement, these give way first."""
    return detect_language([sentence]) == "en" and not _speaks_of_self(_words(sentence))


def _says_something(sentence: str) -> bool:
    """A sentence in any language long enough to hold a fact: three words, or a few
    characters of a script written without spaces."""
    words = sentence.split()
    if len(words) >= 3:
        return True
    letters = sum(ch.isalpha() for ch in sentence)
    return len(words) < 3 and letters >= MIN_UNSPACED_CHARS and " " not in sentence.strip()


# A message of more lines than this is a paste (a log, a config, a table): what it holds is
# the model's to summarize, not facts the user told; only the user's own first-person
# statements in it are carried.
PASTE_LINES = 4


def statements_in(text: str) -> list[str]:
    """The statements of one user message, verbatim, in order."""
    found = [s for s in sentences(text) if is_statement(s)]
    if not _is_paste(text):
        return found
    return [s for s in found if not (told_only(s) or _foreign(s))]


def _is_paste(text: str) -> bool:
    return sum(1 for line in text.splitlines() if line.strip()) > PASTE_LINES


def _foreign(sentence: str) -> bool:
    return detect_language([sentence]) != "en"


def is_retraction(sentence: str) -> bool:
    """ "Forget that I …", "ignore what I said about the budget": it takes a statement back."""
    return _FORGET.search(sentence) is not None and not sentence.rstrip().endswith("?")


def _key_words(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _COMMON and len(w) > 2}


def slot(statement: str) -> str | None:
    """The thing a "my X is Y" statement sets (its X), if it is one."""
    match = _SLOT.search(statement)
    return match.group(1).lower() if match else None


def _overlap(a: str, b: str) -> int:
    return len(_key_words(a) & _key_words(b))


def apply_sentence(carried: list[str], sentence: str, *, add: bool = True) -> list[str]:
    """`carried` after one sentence of a later user message: a retraction removes what it
    names, a correction or a new value of the same "my X" replaces the old statement, any
    other statement is added (with `add`; the kept tail's statements are already verbatim
    in the request, so only what they take back applies)."""
    if is_retraction(sentence):
        named = [c for c in carried if _overlap(c, sentence) > 0]
        if not named and carried and not _key_words(sentence):
            named = [carried[-1]]  # "forget what I just said"
        return [c for c in carried if c not in named]
    if not is_statement(sentence):
        return carried
    new_slot = slot(sentence)
    replaced = [c for c in carried if new_slot is not None and slot(c) == new_slot]
    if not replaced and _CORRECTION.search(sentence):
        # A correction replaces the statement it restates ("I am not allergic to peanuts
        # any more"); one that shares a word only ("Actually, June, not May") is kept
        # beside it, so the rest of the older statement is not lost.
        replaced = [c for c in carried if _restates(sentence, c)]
    out = [c for c in carried if c not in replaced and _same(c) != _same(sentence)]
    return [*out, sentence] if add else out


def _restates(new: str, old: str) -> bool:
    shared = _overlap(new, old)
    return shared >= 2 and 2 * shared >= len(_key_words(old))


def _same(text: str) -> str:
    return " ".join(_words(text)) or " ".join(text.casefold().split())


def carry_through(
    carried: Iterable[str], messages: Iterable[str], *, add: bool = True
) -> list[str]:
    """The statements after each user message of `messages`, in order."""
    out = list(carried)
    for text in messages:
        pasted = _is_paste(text)
        for sentence in sentences(text):
            adds = add and not (pasted and (told_only(sentence) or _foreign(sentence)))
            out = apply_sentence(out, sentence, add=adds)
    return out
