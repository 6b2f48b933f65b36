"""The words that carry a sentence's structure, and a sentence read as structure.

Shared by the support check (engine/memory/support.py: does a statement say what its quote
says?) and the deterministic pass (engine/memory/statements.py: which of the user's own
sentences state something durable?). Both need the same reading of a sentence:

- its words, lower-cased, contractions expanded ("don't" → "do not"), with the clause each
  belongs to (commas, semicolons, "but", "so", "because", "when" … end a clause);
- its marked words (`Mark`): negations, framing words that strengthen ("loves", "always",
  "must"), hedges that weaken ("usually", "maybe"), aspect ("used to", "quit", "no
  longer") and conditions ("when", "if", "unless"), each with its scope: the content words
  that follow it in its clause;
- who the sentence is about: another person ("my manager", "she", "Sarah says") or the
  assistant ("you said");
- whether it asks rather than states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


def _words(text: str) -> frozenset[str]:
    """A word list written as prose, one set."""
    return frozenset(text.split())


# Words a restatement may add or drop freely: who it is about and the neutral verbs of
# wanting and saying.
FRAMING = _words(
    """user users person wants want wanted wanting prefers prefer preferred preferring
    preference preferences likes like liked liking would rather asks ask asked says say said
    states stated tells told wishes wish assistant"""
)
FUNCTION_WORDS = _words(
    """a an the this that these those it its is are was were be been being am do does did
    done doing have has had having will shall can may to of in on at by for with from into
    onto over under about as than so and or but because i me my mine myself we us our ours
    you your yours yourself they them their theirs he him his she her hers there here which
    who whom whose what please s"""
)

MarkKind = Literal["negation", "strong", "hedge", "aspect", "condition"]

# Each marked word belongs to a group: a restatement may swap words of one group (hated →
# hates), never one group for another. The plain negations are one group.
_GROUPS: dict[MarkKind, dict[str, str]] = {}


def _group(kind: MarkKind, *families: str) -> None:
    table = _GROUPS.setdefault(kind, {})
    for family in families:
        forms = family.split()
        for form in forms:
            table[form] = forms[0]


_group(
    "negation",
    "not no none nothing nobody nowhere neither nor without cannot",
    "never",
    "hate hates hated hating",
    "dislike dislikes disliked disliking",
    "avoid avoids avoided avoiding",
    "refuse refuses refused refusing",
    "against",
    "stop stops stopped stopping",
    "forbid forbids forbidden forbidding forbade",
    "prohibit prohibits prohibited prohibiting",
    "ban bans banned banning",
)
_group(
    "strong",
    "always",
    "every everything everyone everywhere all",
    "only",
    "ever",
    "love loves loved loving",
    "adore adores adored",
    "enjoy enjoys enjoyed",
    "favorite favourite favorites favourites",
    "must",
    "should",
    "need needs needed",
    "require requires required requirement",
    "mandatory",
    "have_to has_to had_to got_to",
    "insist insists insisted",
    "demand demands demanded",
    "really",
    "absolutely",
    "strongly",
    "definitely",
    "totally",
    "completely",
    "best",
    "worst",
)
_group(
    "hedge",
    "usually",
    "often",
    "sometimes",
    "occasionally",
    "rarely",
    "seldom",
    "generally",
    "typically",
    "normally",
    "mostly",
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "might",
    "could",
    "tend tends",
)
_group(
    "aspect",
    "used_to",
    "no_longer",
    "anymore any_more",
    "quit quits quitting",
    "gave_up give_up gives_up given_up",
    "cease ceased ceases",
    "formerly",
    "previously",
    "start started starts starting",
    "began begin begins",
)
_group("condition", "if", "when", "whenever", "unless", "while", "whilst", "until", "except")

# The only negations a restatement may swap among themselves; a marked negation ("never",
# "hates") in a statement must be the quote's own word.
PLAIN_NEGATION = "not"
# Which kinds a restatement must keep when its quote has them (what narrows or reverses a
# claim); the others (what strengthens it) it may drop but never add.
KEPT: frozenset[MarkKind] = frozenset({"negation", "hedge", "aspect", "condition"})

# Words joined before they are read: "used to" is one mark, not "used" and "to".
_JOINED = (
    (re.compile(r"\bused to\b"), "used_to"),
    (re.compile(r"\bno longer\b"), "no_longer"),
    (re.compile(r"\bany more\b"), "any_more"),
    (re.compile(r"\b(have|has|had|got) to\b"), r"\1_to"),
    (re.compile(r"\b(gave|give|gives|given) up\b"), r"\1_up"),
)
# Words that end a clause, as punctuation does.
CLAUSE_WORDS = _words(
    """but so because since although though whereas while whilst unless if when whenever
    then until except instead rather than"""
)
# "and"/"or" end a clause when a new subject follows ("… tabs and I …").
_SUBJECTS = _words("i you we he she they it my our your his her their")
# Words around which the order of a sentence's content words matters: "spaces instead of
# tabs" is not "tabs instead of spaces".
RELATIONAL = _words(
    """instead rather than over before after to from into onto vs versus with without
    except but until then unlike replace replaces replaced replacing more less not no never
    against"""
)

# Who else a sentence may be about. A restatement must keep them: "my manager wants X" is
# not the user's wish.
PEOPLE = _words(
    """manager managers boss bosses colleague colleagues coworker coworkers teammate
    teammates team teams wife husband partner girlfriend boyfriend friend friends mom mum
    dad mother father parents parent sister brother son daughter kid kids child children
    family client clients customer customers lead cto ceo company employer teacher doctor
    reviewer reviewers maintainer maintainers everyone everybody someone somebody people
    others he she"""
)
REPORTING = _words(
    """say says said tell tells told think thinks thought claim claims claimed believe
    believes believed mention mentions mentioned suggest suggests suggested recommend
    recommends recommended insist insists insisted reckon reckons asked asks want wants
    wanted prefer prefers preferred like likes liked love loves loved hate hates hated use
    uses used always never usually"""
)
# What "you" or "they" do when a sentence reports them ("you said I …").
SPEECH = _words(
    """say says said tell tells told think thinks thought claim claims claimed believe
    believes believed mention mentions mentioned suggest suggests suggested recommend
    recommends recommended insist insists insisted reckon reckons asked"""
)
_AUX = _words(
    """do does did is are am was were can could would will should shall may might must have
    has had"""
)
_WH = _words("what why how where which who whom whose")
_LEAD_INS = _words("so and but also then ok okay well hmm hey um oh btw actually now")
_QUESTION_SUBJECTS = _words(
    """i you we they he she it the this that these those there my your our people anyone
    someone somebody anybody everyone"""
)
_ENDS_QUESTION = re.compile(r"^[\"'”’)\]]*\s*\?")

_TOKEN = re.compile(r"[^\W\d_]+(?:_[a-z]+)?|\d+|[,;:.!?…—–()\"“”]")
_PUNCT = set(',;:.!?…—–()"“”')


def expand(text: str) -> str:
    """Contractions as words: "don't" → "do not", "user's" → "user"; lower case."""
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


def mark_of(word: str) -> tuple[MarkKind, str] | None:
    """(kind, group) of a marked word, or None."""
    for kind, table in _GROUPS.items():
        group = table.get(word)
        if group is not None:
            return kind, group
    return None


def is_content(word: str) -> bool:
    """A word that carries what the sentence is about (not framing, function or marked)."""
    return (
        word not in FRAMING
        and word not in FUNCTION_WORDS
        and mark_of(word) is None
        and not word.isdigit()
    )


@dataclass(frozen=True)
class Mark:
    kind: MarkKind
    group: str
    word: str
    position: int
    scope: frozenset[str]  # stems of the content words after it in its clause


@dataclass(frozen=True)
class Reading:
    words: tuple[str, ...]  # expanded, lower-cased, punctuation dropped
    marks: tuple[Mark, ...]
    about: frozenset[str]  # who else it is about: people words, names, "you" (reporting)

    def content(self) -> list[tuple[int, str]]:
        """(position, stem) of each content word, in order."""
        return [(i, stem(w)) for i, w in enumerate(self.words) if is_content(w)]

    def stems(self) -> frozenset[str]:
        return frozenset(s for _, s in self.content())

    def marks_of(self, *kinds: MarkKind) -> list[Mark]:
        return [m for m in self.marks if m.kind in kinds]


def read(text: str) -> Reading:
    """`text` read as structure (see the module doc)."""
    joined = expand(text)
    for pattern, replacement in _JOINED:
        joined = pattern.sub(replacement, joined)
    words: list[str] = []
    clauses: list[int] = []  # ends at punctuation and at clause words
    parts: list[int] = []  # ends at punctuation only
    clause = part = 0
    tokens = _TOKEN.findall(joined)
    for i, token in enumerate(tokens):
        if token in _PUNCT:
            if words and parts[-1] == part:
                part += 1
                clause += 1
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if (
            words
            and clauses[-1] == clause
            and (token in CLAUSE_WORDS or (token in ("and", "or") and following in _SUBJECTS))
        ):
            clause += 1
        words.append(token)
        clauses.append(clause)
        parts.append(part)
    marks: list[Mark] = []
    for i, word in enumerate(words):
        found = mark_of(word)
        if found is None:
            continue
        kind, group = found
        # A condition reaches to the next punctuation: "when I'm on the laptop I use
        # spaces" is one condition; any other mark, to the end of its clause.
        within = parts if kind == "condition" else clauses
        scope = frozenset(
            stem(words[j])
            for j in range(i + 1, len(words))
            if within[j] == within[i] and is_content(words[j])
        )
        marks.append(Mark(kind, group, word, i, scope))
    return Reading(tuple(words), tuple(marks), _about(text, words))


_NAME_SAYS = re.compile(
    r"\b([A-Z][a-z]+)(?:'s\b|\s+(?:(?:always|never|usually|really|also)\s+)?(?:"
    + "|".join(sorted(REPORTING))
    + r")\b)"
)


def _about(text: str, words: list[str]) -> frozenset[str]:
    """Who else the sentence speaks of: people words, a name that says, wants or does
    something, "they" or "you" that say or think something."""
    found = {w for w in words if w in PEOPLE}
    for i, word in enumerate(words[:-1]):
        if word in ("they", "you") and words[i + 1] in SPEECH:
            found.add(word)
    for match in _NAME_SAYS.finditer(text):
        name = match.group(1).casefold()
        if name != "i" and is_content(name):
            found.add(name)
    return frozenset(found)


def is_question(text: str, after: str = "") -> bool:
    """Whether `text` asks rather than states: it ends with "?" (or `after`, the text that
    follows it in its message, starts with one), or it opens as a question does ("Do I …",
    "Should we …", "What do you …")."""
    if text.rstrip().endswith("?") or _ENDS_QUESTION.match(after):
        return True
    words = [w for w in _TOKEN.findall(expand(text)) if w not in _PUNCT]
    while words and words[0] in _LEAD_INS:
        words = words[1:]
    if len(words) < 2:
        return False
    first, rest = words[0], words[1:]
    if first in _WH:
        return rest[0] in _AUX
    if first in _AUX:
        nxt = rest[1] if rest[0] == "not" and len(rest) > 1 else rest[0]
        return nxt in _QUESTION_SUBJECTS
    return False


# Hypotheticals: what is imagined is no statement of fact. A request to remember may hold
# a condition ("remember that if the build fails …"), so it is read with the narrower list.
_IMAGINED = (
    r"suppose|supposing|imagine|hypothetically|pretend|what if|let['’]s say|say that|"
    r"in theory|were to|wish"
)
HYPOTHETICAL = re.compile(
    rf"\b(?:{_IMAGINED}|if|assume|assuming|might|could|maybe|perhaps|"
    r"would(?!\s+(?:rather|prefer)))\b",
    re.IGNORECASE,
)
IMAGINED_ONLY = re.compile(rf"\b(?:{_IMAGINED})\b", re.IGNORECASE)


def negated_before(text: str, at: int) -> bool:
    """A negation in `text` before position `at`."""
    return bool(read(text[:at]).marks_of("negation"))


def reported_before(text: str, at: int) -> bool:
    """Someone else, a verb of saying or a "that" before the subject: "my colleague says I
    always …", "you said I …", "not that I …"."""
    reading = read(text[:at])
    words = reading.words
    return any(w in PEOPLE or w in SPEECH or w == "that" for w in words) or bool(reading.about)
