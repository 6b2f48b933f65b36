"""Memory never holds a secret. A write whose text looks like one is refused whole.

The patterns lean towards refusing: a preference worded around the word "token" passes, but
anything with a credential's shape (a provider key prefix, a private key block, a JWT, a long
random-looking string) or a value given for a password, key, token or secret does not.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from engine.memory.errors import SensitiveContent

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
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
        "a password",
        re.compile(
            r"\b(?:password|passwd|passphrase|passcode|pwd|pin code|pin)\b\s*(?:is|was|=|:)\s*\S+",
            re.IGNORECASE,
        ),
    ),
    (
        "a credential",
        re.compile(
            r"\b(?:api[ _-]?key|secret|token|access[ _-]?key|client[ _-]?secret|auth(?:orization)?"
            r"|bearer|credentials?)\b\s*(?:is|was|=|:)?\s*[\"']?(?=[A-Za-z0-9_\-./+=]*\d)"
            r"[A-Za-z0-9_\-./+=]{8,}",
            re.IGNORECASE,
        ),
    ),
    (
        "a connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
    ),
    ("a card number", re.compile(r"\b(?:\d[ -]?){13,19}\b")),
)

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


def find_secret(text: str) -> str | None:
    """What kind of secret `text` seems to hold, or None."""
    for label, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if label == "a card number":
                digits = re.sub(r"\D", "", match.group(0))
                if 13 <= len(digits) <= 19 and _luhn(digits):
                    return label
                continue
            return label
    for match in _TOKENISH.finditer(text):
        if _random_looking(match.group(0)):
            return "a long random-looking string (a key or token)"
    return None


def check_not_secret(*texts: str) -> None:
    """`SensitiveContent` when any of `texts` looks like a secret."""
    for text in texts:
        if not text:
            continue
        found = find_secret(text)
        if found is not None:
            raise SensitiveContent(
                f"this looks like {found}; memory never stores secrets, so nothing was saved"
            )
