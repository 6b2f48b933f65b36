"""Sentences of a user message, and the keys that name them.

A sentence key names one sentence of one message (conversation, message ID and the sentence's
text), so revoking it in the source ledger blocks exactly that claim: the other sentences of
the same message, and the same words said again in a new message, keep their own keys.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# A sentence ends at . ! ? (with closing quotes or brackets) followed by space, or at a line
# break; a list item or a line of its own is a sentence too.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


def split_sentences(text: str) -> list[Sentence]:
    out: list[Sentence] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
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
