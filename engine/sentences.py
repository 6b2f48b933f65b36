"""Sentences of a user message, and the keys that name them.

A sentence key names one sentence of one message (conversation, message ID and the sentence's
text), so revoking it in the source ledger blocks exactly that claim: the other sentences of
the same message, and the same words said again in a new message, keep their own keys.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# A sentence ends at . ! ? (with closing quotes or brackets) followed by space; at the full
# stops of scripts written without spaces (。！？, the Devanagari danda, the Arabic question
# mark and full stop …) with or without space; or at a line break. A list item or a line of
# its own is a sentence too.
_BOUNDARY = re.compile(
    r"(?<=[.!?])[\"')\]»”’]*\s+"
    r"|(?<=[。！？｡‼⁇⁈⁉।॥؟۔።፧፨])[\"')\]»”’」』）】〉》]*\s*"
    r"|\n+"
)
# A word before a "." that does not end the sentence: "e.g.", "z. B.", "Dr.", "ca.", an
# initial ("J. Smith").
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:[^\W\d_]|e\.g|i\.e|z\.\s?b|d\.\s?h|u\.\s?a|bzw|usw|ca|vgl|ggf|evtl|inkl|"
    r"dr|mr|mrs|ms|prof|st|vs|nr|abs|approx|cf|p\.\s?ex|p\.ej|sr|sra|dott|sig|ecc)\.$",
    re.IGNORECASE,
)

# A day's ordinal as German writes it ("am 14. November"): the number's "." does not end the
# sentence when a month or a lower-case word follows.
_ORDINAL = re.compile(r"(?:^|[\s(])\d{1,2}\.$")
_ORDINAL_NEXT = re.compile(
    r"(?:[a-zäöüß]|Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober"
    r"|November|Dezember)"
)


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


def split_sentences(text: str) -> list[Sentence]:
    out: list[Sentence] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
        if _ABBREVIATION.search(text[max(0, match.start() - 8) : match.start()]):
            continue
        if _ORDINAL.search(text[max(0, match.start() - 4) : match.start()]) and _ORDINAL_NEXT.match(
            text, match.end()
        ):
            continue  # "am 14. November", "der 3. Mai", "le 2. …"
        _add(out, text, pos, match.start())
        pos = match.end()
    _add(out, text, pos, len(text))
    return out


def _add(out: list[Sentence], text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    lead = len(chunk) - len(chunk.lstrip())
    trail = len(chunk.rstrip())
    if trail > lead:
        out.append(Sentence(start + lead, start + trail, chunk[lead:trail]))


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def sentence_key(conversation_id: str, message_id: str, sentence: str) -> str:
    material = f"{conversation_id}\0{message_id}\0{normalize(sentence)}"
    return hashlib.blake2b(material.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def keys_for_span(
    conversation_id: str, message_id: str, text: str, start: int, end: int
) -> tuple[str, ...]:
    """The keys of every sentence the span [start, end) touches, in order."""
    return tuple(
        sentence_key(conversation_id, message_id, s.text)
        for s in split_sentences(text)
        if s.start < end and start < s.end
    )
