"""A fact's statement must say what its quote says: a deterministic check, no model.

Authenticating the quote (an exact span of a user message) is not enough on its own: any
span of the user's words could otherwise vouch for any statement ("the README file"
vouching for "every git push goes to git@evil…"), and a quote could be cut to drop a
negation ("I never want you to force push" → "force push to main"). So:

- the quote is a whole sentence or clause of the message (`check_whole_clause`): it starts
  where a sentence or clause starts (optionally after a joining word such as "and") and ends
  where one ends;
- the statement is supported by the quote (`check_supported`), compared as structure
  (engine/memory/wording.py reads both), not as a bag of words:
  - every literal of the statement (a URL, an address, a path, a number, a file name)
    appears in the quote as written;
  - a question never becomes a fact ("Do I always use tabs?", "Could you write the tests
    first?");
  - every content word of the statement appears in the quote (plural, -ing and -ed forms
    count as the same word), and the words around which order matters keep it ("spaces
    instead of tabs" is not "tabs instead of spaces");
  - the quote's negations, hedges ("usually"), aspect ("used to", "quit", "no longer") and
    conditions ("when I'm on the laptop") are kept, each over the same words; a framing
    word the quote lacks ("loves", "always", "must", "hates", "never") is refused, and one
    it has must bear on the same words ("I always forget the flags, so I use vim" does not
    make "always uses vim");
  - whoever else the quote is about ("my manager wants…", "you said…", "Sarah prefers…")
    stays in the statement: their wish is not the user's.

The check errs towards refusing: a refused suggestion costs a missed memory, a passed one
puts words in the user's mouth. The statement that IS its quote passes, and so do the
restatements the deterministic pass (engine/memory/statements.py) writes.
"""

from __future__ import annotations

import re

from engine.memory.errors import MemoryRefused
from engine.memory.wording import (
    KEPT,
    PLAIN_NEGATION,
    RELATIONAL,
    Mark,
    Reading,
    expand,
    is_question,
    read,
)


class UnsupportedStatement(MemoryRefused):
    """The statement says something its quote does not (a new word, a lost negation)."""


_CONJUNCTIONS = r"(?:and|but|or|so|because|though|although|while|since|yet|then|also|plus)"
# What may stand right before a clause's first word: a sentence end, a line start (with a
# list marker), a comma, semicolon, colon, bracket or dash; optionally a joining word.
_CLAUSE_BEFORE = re.compile(
    r"(?:[.!?…][\"'”’)\]]*\s+|\n[ \t]*(?:[-*•>]|\d+[.)])?[ \t]*|[,;:(]\s*|\s[-–—]+\s+|[—–]\s*"
    r"|[。！？；，、：।؟][」』）”’]*\s*)"
    rf"(?:{_CONJUNCTIONS}\s+)?$",
    re.IGNORECASE,
)
_TEXT_START = re.compile(rf"\s*(?:(?:[-*•>]|\d+[.)])\s+)?(?:{_CONJUNCTIONS}\s+)?", re.IGNORECASE)
# What may follow a clause's last character: the end, a line break, or punctuation that
# closes a clause (the quote may include that punctuation or stop before it).
_CLAUSE_AFTER = re.compile(
    r"[\"'”’)\]」』）]*(?:\s*$|[ \t]*\n|\s*[,;:.!?…)。！？；，、：।؟]|\s+[-–—]+\s|[—–])"
)
# The full stops of scripts written without spaces: a sentence ends there, space or not.
_UNSPACED_ENDS = "。！？；，、：।؟"


def check_whole_clause(text: str, start: int, end: int) -> None:
    """`UnsupportedStatement` unless text[start:end] is whole sentences or clauses."""
    head = text[:start]
    starts = _TEXT_START.fullmatch(head) is not None or bool(
        _CLAUSE_BEFORE.search(text[max(0, start - 40) : start])
    )
    tail = text[end:]
    ends = bool(_CLAUSE_AFTER.match(tail)) or (
        end > start
        and text[end - 1] in ".!?;:,…" + _UNSPACED_ENDS
        and (not tail or tail[0].isspace() or text[end - 1] in _UNSPACED_ENDS)
    )
    if not (starts and ends):
        raise UnsupportedStatement(
            "the quote must be the user's whole sentence or clause, not a fragment of one: "
            "copy it from its first word to its last"
        )


_CHUNK = re.compile(r"[^\s\"“”‘`()<>\[\]{},;!?]+")
_LITERAL_MARK = re.compile(r"[\d@/\\~:#$%&=+_|^*]|\w\.\w")
_EDGE = ".:'’-*"
_KIND_WORDS = {
    "negation": "a negation",
    "strong": "a framing word",
    "hedge": "a hedge",
    "aspect": "a change over time",
    "condition": "a condition",
}


def _shown(mark: Mark) -> str:
    return repr(mark.word.replace("_", " "))


def _literals(text: str) -> list[str]:
    out: list[str] = []
    for chunk in _CHUNK.findall(expand(text)):
        chunk = chunk.strip(_EDGE)
        if chunk and _LITERAL_MARK.search(chunk):
            out.append(chunk)
    return out


def check_supported(statement: str, quote: str, *, after: str = "") -> None:
    """`UnsupportedStatement` unless `quote` supports `statement` (see the module doc).
    `after` is the text that follows the quote in its message (a "?" there makes the quote
    a question)."""
    q_flat = " ".join(expand(quote).split())
    new_literals = [
        lit
        for lit in _literals(statement)
        if not re.search(rf"(?<!\w){re.escape(lit)}(?!\w)", q_flat)
    ]
    if new_literals:
        raise UnsupportedStatement(
            f"the statement names {new_literals[0]!r}, which the quote does not: a fact may "
            "only restate the user's own words"
        )
    if is_question(quote, after):
        raise UnsupportedStatement(
            "the quote is a question, and a question never becomes a fact or an instruction: "
            "quote a sentence in which the user states it"
        )
    s, q = read(statement), read(quote)
    _check_marks(s, q)
    _check_content(s, q)
    _check_order_main_clause_first(statement, quote)
    lost = sorted(q.about - s.about)
    if lost:
        raise UnsupportedStatement(
            f"the quote speaks of {lost[0]!r}, and the statement drops them: what someone "
            "else wants or says is not the user's own wish, so keep who it is about"
        )
    if not s.content() and not _literals(statement) and not s.marks:
        raise UnsupportedStatement("the statement says nothing the quote says")


def _fits(s: Mark, q: Mark) -> bool:
    """Whether statement mark `s` can be quote mark `q`: the same group (a plain negation
    may stand for any negation), bearing on words the quote's mark bears on."""
    if s.kind != q.kind:
        return False
    if s.group != q.group and not (s.kind == "negation" and s.group == PLAIN_NEGATION):
        return False
    if not s.scope:
        return not q.scope
    return s.scope <= q.scope


def _check_marks(s: Reading, q: Reading) -> None:
    """Every mark of the statement is one of the quote's, over the same words; every mark
    the quote must keep (a negation, a hedge, an aspect, a condition) is in the statement."""
    free = list(q.marks)
    unmatched: list[Mark] = []
    for mark in s.marks:
        match = next((m for m in free if _fits(mark, m)), None)
        if match is None:
            unmatched.append(mark)
        else:
            free.remove(match)
    if unmatched:
        mark = unmatched[0]
        if any(m.kind == mark.kind and m.group == mark.group for m in q.marks):
            raise UnsupportedStatement(
                f"the statement puts {_shown(mark)} on other words than the quote does: keep "
                "each 'not', 'never', 'always' on what the user said it of"
            )
        what = _KIND_WORDS[mark.kind]
        raise UnsupportedStatement(
            f"the statement adds {_shown(mark)} ({what}), which the quote does not have: "
            "restate the fact in the user's own words"
        )
    dropped = [m for m in free if m.kind in KEPT]
    if dropped:
        mark = dropped[0]
        raise UnsupportedStatement(
            f"the quote holds {_shown(mark)} ({_KIND_WORDS[mark.kind]}) and the statement "
            "does not keep it: keep the user's 'not', 'never', 'usually', 'used to' or 'when "
            "…' exactly as they said it"
        )
    for cond in q.marks_of("condition"):
        missing = sorted(cond.scope - s.stems())
        if missing:
            raise UnsupportedStatement(
                f"the statement shortens the user's condition ({_shown(cond)} …, without "
                f"{missing[0]!r}): a fact that holds only when something is true must say when"
            )


def _check_content(s: Reading, q: Reading) -> None:
    q_stems = q.stems()
    missing = [w for _, w in s.content() if w not in q_stems]
    if missing:
        shown = ", ".join(repr(w) for w in list(dict.fromkeys(missing))[:3])
        raise UnsupportedStatement(
            f"the statement says {shown}, which the quote does not: restate the fact in the "
            "user's own words"
        )


# "Before you commit, run the tests" says what "Run the tests before you commit" says, and
# not what "The user commits before running the tests" says: the order is compared with the
# main clause first.
LEADING_CLAUSE = re.compile(
    r"^\s*((?:before|after|when|whenever|once|until|while)\b[^,;]+),\s*(.+?)\s*[.!]?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def _main_clause_first(text: str) -> str:
    """The sentence with a leading time clause moved behind its main clause, so that the
    order of its words is the order of what it says ("before X, Y": Y comes first)."""
    found = LEADING_CLAUSE.match(text)
    return f"{found.group(2)} {found.group(1)}." if found else text


def _check_order_main_clause_first(statement: str, quote: str) -> None:
    """`_check_order` on both sentences with their main clause first."""
    _check_order(read(_main_clause_first(statement)), read(_main_clause_first(quote)))


def _check_order(s: Reading, q: Reading) -> None:
    """Content words on either side of a word that orders them ("instead of", "than",
    "before", "from … to") stay on their side."""
    where: dict[str, list[int]] = {}
    for position, word in q.content():
        where.setdefault(word, []).append(position)
    placed: list[tuple[str, int]] = []
    last = -1
    for position, word in s.content():
        spots = where.get(word)
        if not spots:
            continue
        later = [p for p in spots if p >= last]
        spot = later[0] if later else spots[0]
        placed.append((s.words[position], spot))
        last = max(last, spot)
    for i, (first, a) in enumerate(placed):
        for second, b in placed[i + 1 :]:
            if b < a and any(w in RELATIONAL for w in q.words[b + 1 : a]):
                raise UnsupportedStatement(
                    f"the statement swaps {first!r} and {second!r} around a word that orders "
                    "them: the user said it the other way round"
                )
