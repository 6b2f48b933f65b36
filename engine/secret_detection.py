"""What looks like a secret: memory refuses to store one (engine/memory/sensitivity.py) and
tool results have it redacted (engine/redaction.py).

Three layers, each leaning towards refusing:

- the shapes of known credentials, from `detect-secrets` (its regular-expression plugins:
  AWS, Stripe, Slack, GitHub, GitLab, npm, PyPI, OpenAI, private keys, basic-auth URLs,
  JWTs, ...), maintained by people who track those formats;
- shapes it does not cover or covers too narrowly, written here: short Stripe-style keys,
  lowercase or spaced private-key headers, social security numbers, IBANs (mod-97 checked),
  card numbers (Luhn checked), connection strings, long random-looking strings;
- keyword rules, for secrets said in prose rather than code: a password, pw, passphrase,
  PIN, login, secret, token or key followed by a value ("my password for the router is
  hunter2", "db pw hunter2", "router login is admin / Tr0ub4dor&3"), and a code that opens
  a door, a gate, an alarm or a safe ("the code for the back door is 4821 at night").

A preference worded around the word "token" or "key" passes ("I prefer answers that count
tokens exactly"); a value given for one does not.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import pkgutil
import re
from collections import Counter
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)


def _words(text: str) -> frozenset[str]:
    """A word list written as prose, one set."""
    return frozenset(text.split())


# Words that follow "password is" in ordinary sentences about passwords, not a value.
_NOT_A_VALUE = _words(
    """required needed necessary set wrong incorrect missing empty stored saved managed
    kept long short strong weak too not the a an in on at my your our their his her its
    changed reset expired hashed encrypted secret different same case sensitive optional
    mandatory given provided asked prompted shown hidden rotated updated valid invalid
    ok fine good bad generated random unique private safe important"""
)
_STRONG = r"pass(?:word|wd|phrase|code|key)?s?|pwd|pw|pins?|pin[ -]?(?:code|number)"
_WEAK = (
    r"log[ -]?ins?|logon|credentials?|secrets?|tokens?|(?:api|access|secret|private|ssh|"
    r"licen[cs]e|auth|signing|encryption|master|recovery)[ _-]?keys?"
)
_GAP = r"(?:\s+[^\s.!?;,]+){0,5}?"  # a few words between the keyword and its verb
_ASSIGN = r"\s*(?:is|was|are|were|=|:|->|=>|-|equals)\s*"
_VALUE = r"[\"'“‘]?(?P<value>[^\s\"'”’]{2,})"
_CREDENTIAL_LIKE = re.compile(r"\d|[^\w\s]|[a-z][A-Z]|[A-Z]{2,}[a-z]")

_STRONG_ASSIGNED = re.compile(rf"\b(?:{_STRONG})\b{_GAP}{_ASSIGN}{_VALUE}", re.IGNORECASE)
_WEAK_ASSIGNED = re.compile(rf"\b(?:{_WEAK})\b{_GAP}{_ASSIGN}{_VALUE}", re.IGNORECASE)
# A bare "key" is mostly a keyboard key or a key point: only a long value with a digit.
_BARE_KEY = re.compile(
    rf"\bkeys?\b{_GAP}{_ASSIGN}[\"']?(?=[^\s\"']*\d)(?=[^\s\"']*[A-Za-z])[^\s\"']{{8,}}",
    re.IGNORECASE,
)
_STRONG_DIRECT = re.compile(
    rf"\b(?:{_STRONG})\b\s*[:=]?\s+[\"']?(?P<value>(?=\S*[0-9!@#$%^&*_+=~])[^\s\"']{{4,}})",
    re.IGNORECASE,
)
# A code that opens something: "the code for the back door is 4821", "alarm code: 1234",
# "the gate combination is 12-34-56". An error, status or exit code is no secret.
_LOCKS = (
    r"(?:doors?|gates?|alarms?|locks?|safes?|garages?|buildings?|entry|entrance|access|"
    r"security|keypads?|lockers?|padlocks?|vaults?|house|apartment|flat|office|bike|wi-?fi|"
    r"front|back|side)"
)
_CODE_VALUE = r"[\"'#]?(?=(?:[^\s\"']*?\d){3})[^\s\"']{3,}"
_CODE_IS = r"(?:\s+(?:is|was|are|were|equals)\s+|\s*[:=]\s*)"
_LOCK_CODE = re.compile(
    rf"\b{_LOCKS}\s+(?:pass)?(?:codes?|combinations?|combos?)\b(?:{_CODE_IS}|\s+){_CODE_VALUE}|"
    rf"\b(?:codes?|combinations?|combos?)\b(?:\s+[^\s.!?;,]+){{0,5}}?\s+{_LOCKS}\b"
    rf"{_CODE_IS}{_CODE_VALUE}",
    re.IGNORECASE,
)
_PAIR = re.compile(
    rf"\b(?:{_STRONG}|{_WEAK}|user(?:name)?|account)\b.{{0,40}}?\S+\s*/\s*(?=\S*[0-9!@#$%^&*])"
    r"\S{4,}",
    re.IGNORECASE,
)

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-{2,}\s*begin\s+[a-z0-9 ]*private\s+key", re.IGNORECASE)),
    ("an API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("an API key", re.compile(r"\b[rsp]k_(?:live|test|prod)_[A-Za-z0-9]{4,}", re.IGNORECASE)),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ),
    ("an AWS key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    (
        "a connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
    ),
    (
        "a social security number",
        re.compile(r"\b(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b"),
    ),
    (
        "a social security number",
        re.compile(r"\b(?:ssn|social security(?: number)?)\b\D{0,20}\d{3}\D?\d{2}\D?\d{4}\b", re.I),
    ),
)
_CARD = re.compile(r"\b(?:\d[ -]?){13,19}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", re.IGNORECASE)
_TOKENISH = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")


def _entropy(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _random_looking(word: str) -> bool:
    classes = sum(bool(re.search(p, word)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes >= 2 and _entropy(word) >= 4.0


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = re.sub(r"\s", "", text).upper()
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(c, 36)) for c in moved)
    return int(digits) % 97 == 1


Detector = Callable[[str], Iterator[str]]


@functools.cache
def _maintained() -> tuple[tuple[str, Detector], ...]:
    """detect-secrets' regular-expression plugins (public IP addresses aside: an address
    is not a secret), or none when the package is missing (logged once)."""
    try:
        import detect_secrets.plugins as plugins
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError:
        log.warning("memory: detect-secrets is not installed; using Brim's own patterns only")
        return ()
    found: list[tuple[str, Detector]] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        try:
            module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        except Exception:  # one broken plugin must not disable the others
            log.warning("memory: detect-secrets plugin %s did not load", info.name)
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, RegexBasedDetector)
                and value is not RegexBasedDetector
                and value.__module__ == module.__name__
                and value.__name__ != "IPPublicDetector"
            ):
                plugin = value()
                found.append((str(plugin.secret_type), plugin.analyze_string))
    return tuple(found)


def _keyword_secret(text: str) -> str | None:
    for match in _STRONG_ASSIGNED.finditer(text):
        value = match.group("value").casefold().strip(".,;:!?")
        if value not in _NOT_A_VALUE or "phrase" in match.group(0).casefold():
            return "a password"
    if _STRONG_DIRECT.search(text) or _PAIR.search(text):
        return "a password"
    if _LOCK_CODE.search(text):
        return "a door or lock code"
    if _BARE_KEY.search(text):
        return "a credential"
    for match in _WEAK_ASSIGNED.finditer(text):
        if _CREDENTIAL_LIKE.search(match.group("value").rstrip(".,;:!?")):
            return "a credential"
    return None


def find_secret(text: str, *, prose: bool = True) -> str | None:
    """What kind of secret `text` seems to hold, or None. For text that is not prose (a
    tool's output: code, paths, logs) only the shapes of credentials count: the keyword
    rules would take `token = next(it)` for one, the random-looking rule every long path."""
    if not text:
        return None
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return "a card number"
    for match in _IBAN.finditer(text):
        parts = match.group(0).split(" ")  # the match may run on into the next words
        if any(_iban_valid("".join(parts[:k])) for k in range(len(parts), 0, -1)):
            return "a bank account number (IBAN)"
    for kind, analyze in _maintained():
        if any(True for _ in analyze(text)):
            return f"a secret ({kind})"
    if not prose:
        return None
    found = _keyword_secret(text)
    if found is not None:
        return found
    for match in _TOKENISH.finditer(text):
        if _random_looking(match.group(0)):
            return "a long random-looking string (a key or token)"
    return None
