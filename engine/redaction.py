"""Secrets taken out of text before the model, the store or the terminal gets it.

A tool result (a `printenv`, a `.env` file read, a build log) or an engine's error body (a
401 that echoes the key) can carry a credential. Such text is redacted where it enters
Brim: each secret is replaced by a marker that names its kind, `[redacted: looks like an
API key]`, and the caller is told how many of which kind went.

Two kinds of secret are found: values Brim knows are secret (the engines' API keys), found
exactly, and whatever memory's secret detector (engine/secret_detection.py) flags: the
shapes of known credentials and, in an engine's prose (not in tool results, where code says
`token = next(tokens)` and paths look random), its keyword rules ("password: hunter2") and
long random-looking strings. A private key the detector knows by its header goes with its
whole block, to the END line.

The detector says whether a text holds a secret, not where, so the place is found by
narrowing: halves of the text that hold none are kept as they are; in one that does, the
shortest run of words from its start that holds one ends at the secret (a key's shape ends
in its last word, a keyword rule's value is the word after it), and the fewest words back
from there whose removal leaves none are taken out (the value, not the keyword before it;
every group of a card number). A part that still holds a secret after that is replaced
whole: what comes out never holds one the detector can see.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from engine.secret_detection import find_secret

# The kind of the notice that says a tool result had secrets taken out (its details: the
# tool, count, kinds).
NOTICE_SECRET_REDACTED: Final = "secret_redacted"
# The label a known secret's marker carries.
KNOWN_KEY = "an engine API key"
PRIVATE_KEY = "a private key"
_PEM_BLOCK = re.compile(
    r"-{2,}\s*BEGIN [A-Z0-9 ]*PRIVATE KEY\s*-{2,}"
    r".*?(?:-{2,}\s*END [A-Z0-9 ]*PRIVATE KEY\s*-{2,}|\Z)",
    re.DOTALL | re.IGNORECASE,
)
# A known value shorter than this is no credential worth finding in text ("x", "1234").
MIN_KNOWN_CHARS = 6
# How far back from a secret's last word a secret's first word may lie (a card number in
# groups of one digit), and how many secrets one part may hold before it is replaced whole.
MAX_SECRET_WORDS = 24
MAX_SECRETS_PER_PART = 64
# A line longer than this is searched in halves too, cut at white space.
LONG_LINE_CHARS = 4096
# The first of the private-use characters that hold the places of secrets while the text
# is searched for more: one character, so no rule reads it as a value.
_PLACEHOLDERS = 0xF0000
# Words end at white space, and after "=" (`NAME=value`: the name stays).
_WORDS = re.compile(r"(\s+|(?<==))")
_DIGITS = re.compile(r"[\d-]+")


def marker(label: str) -> str:
    """What a secret becomes: `[redacted: looks like an API key]`."""
    return f"[redacted: looks like {label}]"


@dataclass(frozen=True)
class Redaction:
    """The text without its secrets, and how many of which kind were taken out."""

    text: str
    found: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.found.values())

    def kinds(self) -> str:
        """The kinds found, for a notice's data: `an API key, a password`."""
        return ", ".join(sorted(self.found))


def _detect(text: str, prose: bool) -> str | None:
    return find_secret(text, prose=prose)


def _halves(text: str) -> tuple[str, str, str] | None:
    """`text` cut in two at the line break nearest its middle line (or, in one long line,
    at the white space nearest its middle): (left, separator, right), or None when it is
    one short line or one word."""
    lines = text.split("\n")
    if len(lines) > 1:
        middle = len(lines) // 2
        return "\n".join(lines[:middle]), "\n", "\n".join(lines[middle:])
    if len(text) <= LONG_LINE_CHARS:
        return None
    middle = len(text) // 2
    cut = text.rfind(" ", 0, middle)
    if cut <= 0:
        cut = text.find(" ", middle)
    if cut <= 0:
        return None
    return text[:cut], " ", text[cut + 1 :]


class _Redactor:
    def __init__(self, text: str, prose: bool) -> None:
        self._prose = prose
        self._labels: dict[str, str] = {}  # placeholder -> label
        self._next = _PLACEHOLDERS
        self._taken = set(text)

    def _detect(self, text: str) -> str | None:
        return _detect(text, self._prose)

    def placeholder(self, label: str) -> str:
        while chr(self._next) in self._taken:
            self._next += 1
        char = chr(self._next)
        self._next += 1
        self._labels[char] = label
        return char

    def part(self, text: str) -> str:
        """`text` with each secret in it (on its lines or across them) held by a placeholder."""
        if self._detect(text) is None:
            return text
        halves = _halves(text)
        if halves is not None:
            text = self.part(halves[0]) + halves[1] + self.part(halves[2])
            if self._detect(text) is None:
                return text
        return self._words(text)

    def _words(self, text: str) -> str:
        words = _WORDS.split(text)  # words at even indices, the spaces between at odd ones
        for _ in range(MAX_SECRETS_PER_PART):
            label = self._detect(text)
            if label is None:
                return text
            end = self._last_word(words)
            if end is None:
                break
            start = self._first_word(words, end)
            words[start : end + 1] = [self.placeholder(label)]
            text = "".join(words)
        label = self._detect(text)
        return text if label is None else self.placeholder(label)

    def _first_word(self, words: list[str], end: int) -> int:
        """Where the secret that ends at word `end` begins: the fewest words back whose
        removal leaves the words up to `end` without a secret (the value after a keyword,
        not the keyword), and the groups of digits before it (a card number written in
        groups)."""
        start = end
        for back in range(end, max(-1, end - 2 * MAX_SECRET_WORDS), -2):
            if self._detect("".join([*words[:back], "\ufffd"])) is None:
                start = back
                break
        digits = _DIGITS.fullmatch
        while start >= 2 and digits(words[start]) and digits(words[start - 2]):
            start -= 2
        return start

    def _last_word(self, words: list[str]) -> int | None:
        """The index of the word where the first prefix of `words` that holds a secret
        ends (found by bisection), or None when no prefix does."""
        low, high = 0, len(words) - 1
        if high < 0 or self._detect("".join(words)) is None:
            return None
        while low < high:
            middle = (low + high) // 2
            if self._detect("".join(words[: middle + 1])) is not None:
                high = middle
            else:
                low = middle + 1
        return low if low % 2 == 0 else low - 1

    def finish(self, text: str, found: Counter[str]) -> str:
        for char, label in self._labels.items():
            if char in text:
                found[label] += text.count(char)
                text = text.replace(char, marker(label))
        return text


def _key_blocks(text: str, redactor: _Redactor) -> str:
    """Each PEM private key block held by one placeholder: its body is the secret, and no
    rule for tool results knows base64 lines by their shape."""
    if "PRIVATE KEY" not in text.upper():
        return text
    return _PEM_BLOCK.sub(lambda _: redactor.placeholder(PRIVATE_KEY), text)


def _present(text: str, known: Iterable[str]) -> list[str]:
    """The `known` values worth finding (MIN_KNOWN_CHARS or more) that `text` holds,
    longest first (a key that holds another is replaced whole)."""
    values = sorted({v for v in known if v and len(v) >= MIN_KNOWN_CHARS}, key=len, reverse=True)
    return [v for v in values if v in text]


def without_known(text: str, known: Iterable[str]) -> str:
    """`text` with each of the `known` values replaced by its marker, and nothing else
    searched: cheap enough for every line a chat prints."""
    for value in _present(text, known):
        text = text.replace(value, marker(KNOWN_KEY))
    return text


def redact(text: str, known: Iterable[str] = (), *, prose: bool = True) -> Redaction:
    """`text` with every secret replaced by its marker: each of the `known` values (at
    least MIN_KNOWN_CHARS long) wherever it appears, and whatever the detector flags
    (without `prose`, by shape only: code and logs say `token = …` all the time)."""
    present = _present(text, known)
    if not present and _detect(text, prose) is None:
        return Redaction(text)  # the common case: one pass of the detector
    redactor = _Redactor(text, prose)
    if present:
        held = redactor.placeholder(KNOWN_KEY)
        for value in present:
            text = text.replace(value, held)
    text = _key_blocks(text, redactor)
    found: Counter[str] = Counter()
    return Redaction(redactor.finish(redactor.part(text), found), dict(found))


def redacted(text: str, known: Iterable[str] = (), *, prose: bool = True) -> str:
    """Only the text of `redact`."""
    return redact(text, known, prose=prose).text
