"""A fact's statement must say what its quote says: a deterministic check, no model.

Authenticating the quote (an exact span of a user message) is not enough on its own: any
span of the user's words could otherwise vouch for any statement ("the README file"
vouching for "every git push goes to git@evil…"), and a quote could be cut to drop a
negation ("I never want you to force push" → "force push to main"). So:

- the quote is a whole sentence or clause of the message (`check_whole_clause`): it starts
  where a sentence or clause starts (optionally after a joining word such as "and") and ends
  where one ends;
- the statement is supported by the quote (`check_supported`): every content word of the
  statement, framing words such as "user", "wants", "prefers" and function words aside,
  appears in the quote (plural, -ing and -ed forms count as the same word); the quote holds
  a negation exactly when the statement does, with the same parity; and every literal of
  the statement (a URL, an address, a path, a number, a file name) appears in the quote as
  written.

The check errs towards refusing: a refused suggestion costs a missed memory, a passed one
puts words in the user's mouth.
"""

from __future__ import annotations

import re

from engine.memory.errors import MemoryRefused


class UnsupportedStatement(MemoryRefused):
    """The statement says something its quote does not (a new word, a lost negation)."""


_CONJUNCTIONS = r"(?:and|but|or|so|because|though|although|while|since|yet|then|also|plus)"
# What may stand right before a clause's first word: a sentence end, a line start (with a
# list marker), a comma, semicolon, colon, bracket or dash; optionally a joining word.
_CLAUSE_BEFORE = re.compile(
    r"(?:[.!?…][\"'”’)\]]*\s+|\n[ \t]*(?:[-*•>]|\d+[.)])?[ \t]*|[,;:(]\s*|\s[-–—]+\s+|[—–]\s*)"
    rf"(?:{_CONJUNCTIONS}\s+)?$",
    re.IGNORECASE,
)
_TEXT_START = re.compile(rf"\s*(?:(?:[-*•>]|\d+[.)])\s+)?(?:{_CONJUNCTIONS}\s+)?", re.IGNORECASE)
# What may follow a clause's last character: the end, a line break, or punctuation that
# closes a clause (the quote may include that punctuation or stop before it).
_CLAUSE_AFTER = re.compile(r"[\"'”’)\]]*(?:\s*$|[ \t]*\n|\s*[,;:.!?…)]|\s+[-–—]+\s|[—–])")


def check_whole_clause(text: str, start: int, end: int) -> None:
    """`UnsupportedStatement` unless text[start:end] is whole sentences or clauses."""
    head = text[:start]
    starts = _TEXT_START.fullmatch(head) is not None or bool(
        _CLAUSE_BEFORE.search(text[max(0, start - 40) : start])
    )
    tail = text[end:]
    ends = bool(_CLAUSE_AFTER.match(tail)) or (
        end > start and text[end - 1] in ".!?;:,…" and (not tail or tail[0].isspace())
    )
    if not (starts and ends):
        raise UnsupportedStatement(
            "the quote must be the user's whole sentence or clause, not a fragment of one: "
            "copy it from its first word to its last"
        )


def _words(text: str) -> frozenset[str]:
    """A word list written as prose, one set."""
    return frozenset(text.split())


FRAMING = _words(
    """user users person wants want wanted wanting prefers prefer preferred preferring
    preference preferences likes like liked liking loves love loved would rather asks ask
    asked says say said states stated tells told wishes wish assistant"""
)
FUNCTION_WORDS = _words(
    """a an the this that these those it its is are was were be been being am do does did
    done doing have has had having will shall should can could may might must to of in on
    at by for with from into onto over under about as than so and or but if when while
    because i me my mine myself we us our ours you your yours yourself they them their
    theirs he him his she her hers there here which who whom whose what please s"""
)
NEGATIONS = _words(
    """not no never none nothing nobody nowhere neither nor without cannot hate hates hated
    hating dislike dislikes disliked disliking avoid avoids avoided avoiding refuse refuses
    refused refusing against stop stops stopped stopping forbid forbids forbidden forbidding
    prohibit prohibits prohibited ban bans banned dont doesnt didnt wont cant isnt arent
    wasnt werent shouldnt wouldnt couldnt mustnt hasnt havent hadnt"""
)

_CHUNK = re.compile(r"[^\s\"“”‘`()<>\[\]{},;!?]+")
_LITERAL_MARK = re.compile(r"[\d@/\\~:#$%&=+_|^*]|\w\.\w")
_WORD = re.compile(r"[^\W\d_]+")
_EDGE = ".:'’-*"


def _expand(text: str) -> str:
    """Contractions as words: "don't" → "do not", "user's" → "user"."""
    text = text.replace("’", "'").casefold()
    text = re.sub(r"\b(can|won|shan)'t\b", r"\1 not", text)
    text = re.sub(r"n't\b", " not", text)
    return re.sub(r"'(?:s|re|ll|ve|d|m)\b", "", text)


def stem(word: str) -> str:
    """A crude stem, so that push/pushes, prefer/preferred, use/using compare equal."""
    w = word.casefold()
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and (
        w.endswith("sses") or (w.endswith("es") and (w[-3] in "sxz" or w[-4:-2] in ("ch", "sh")))
    ):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if len(w) > 3 and w.endswith("ly"):
        w = w[:-2]
    return w[:-1] if len(w) > 2 and w.endswith("e") else w


def _analyse(text: str) -> tuple[list[str], list[str], int]:
    """(literals, words, negations) of a text, words lower-cased, contractions expanded."""
    literals: list[str] = []
    words: list[str] = []
    for chunk in _CHUNK.findall(_expand(text)):
        chunk = chunk.strip(_EDGE)
        if not chunk:
            continue
        if _LITERAL_MARK.search(chunk):
            literals.append(chunk)
        words.extend(_WORD.findall(chunk))
    negations = sum(1 for w in words if w in NEGATIONS)
    return literals, words, negations


def check_supported(statement: str, quote: str) -> None:
    """`UnsupportedStatement` unless `quote` supports `statement` (see the module doc)."""
    s_literals, s_words, s_neg = _analyse(statement)
    _, q_words, q_neg = _analyse(quote)
    q_flat = " ".join(_expand(quote).split())
    new_literals = [
        lit for lit in s_literals if not re.search(rf"(?<!\w){re.escape(lit)}(?!\w)", q_flat)
    ]
    if new_literals:
        raise UnsupportedStatement(
            f"the statement names {new_literals[0]!r}, which the quote does not: a fact may "
            "only restate the user's own words"
        )
    if (s_neg > 0) != (q_neg > 0) or s_neg % 2 != q_neg % 2:
        said = "a negation" if q_neg else "no negation"
        raise UnsupportedStatement(
            f"the quote holds {said} and the statement does not match it: keep the user's "
            "'not', 'never' or 'no' exactly as they said it"
        )
    content = [w for w in s_words if w not in FRAMING and w not in FUNCTION_WORDS]
    content = [w for w in content if w not in NEGATIONS]
    q_stems = {stem(w) for w in q_words}
    missing = [w for w in dict.fromkeys(content) if stem(w) not in q_stems]
    if missing:
        shown = ", ".join(repr(w) for w in missing[:3])
        raise UnsupportedStatement(
            f"the statement says {shown}, which the quote does not: restate the fact in the "
            "user's own words"
        )
    if not content and not s_literals and s_neg == 0:
        raise UnsupportedStatement("the statement says nothing the quote says")
