"""The user messages a memory write may quote, and the check that a quote really is one.

Only the person's own messages are sources: role `user`, kind `chat`, not the journal
preamble Brim folds in on resume, not a notice, not a summary or continuation. Each gets a
source ID for the pass (random per pass, so text elsewhere cannot guess one). A quote must
be a span of exactly one source's text: tool output, the model's own text, a context block
and a rendered transcript are never sources, so "remember that the user prefers X" inside
any of them cannot create one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from engine.context.work_state import PREAMBLE_HEAD
from engine.memory.errors import QuoteRejected
from engine.messages import Message
from engine.sentences import keys_for_span

MIN_QUOTE_CHARS = 8
MIN_QUOTE_WORDS = 2
MIN_UNSPACED_QUOTE_CHARS = 4
_QUOTE_MARKS = "\"'“”‘’`«» \t\r\n"


def is_user_source(message: Message) -> bool:
    if message.role != "user" or message.kind != "chat" or message.is_notice:
        return False
    return not message.content.startswith(PREAMBLE_HEAD)


@dataclass(frozen=True)
class Source:
    id: str
    conversation_id: str
    message: Message


@dataclass(frozen=True)
class QuoteMatch:
    source: Source
    start: int
    end: int
    text: str  # the span as the user wrote it
    keys: tuple[str, ...]

    @property
    def reference(self) -> str:
        return f"conversation {self.source.conversation_id} message {self.source.message.id}"


class SourceSet:
    """The authenticated user messages of one pass, each with its source ID."""

    def __init__(self, conversation_id: str, messages: Iterable[Message]) -> None:
        self.conversation_id = conversation_id
        prefix = "u" + secrets.token_hex(2)
        self._sources: list[Source] = []
        for message in messages:
            if is_user_source(message):
                tag = f"{prefix}-{len(self._sources) + 1}"
                self._sources.append(Source(tag, conversation_id, message))
        self._by_message = {s.message.id: s for s in self._sources}

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[Source]:
        return iter(self._sources)

    def tag_for(self, message: Message) -> str | None:
        source = self._by_message.get(message.id)
        return source.id if source is not None else None

    def matches(self, quote: str, source_id: str | None = None) -> list[QuoteMatch]:
        """Every source holding `quote` as a span (`source_id` narrows it to one).
        `QuoteRejected` when the quote is too short or no source holds it."""
        wanted = quote.strip(_QUOTE_MARKS)
        if _too_short(wanted):
            raise QuoteRejected(
                "the quote is too short: copy the user's whole sentence exactly as they wrote it"
            )
        if not self._sources:
            raise QuoteRejected("there is no user message to quote in this pass")
        candidates = self._sources
        if source_id:
            candidates = [s for s in self._sources if s.id == source_id.strip()]
            if not candidates:
                raise QuoteRejected(
                    f"{source_id!r} is not a user message source; quote only the messages "
                    "marked as user sources"
                )
        found = [m for s in candidates if (m := _find(s, wanted)) is not None]
        if not found:
            where = "that user message" if source_id else "any user message"
            raise QuoteRejected(
                f"the quote is not an exact span of {where}: memory keeps only the user's own "
                "words (text from tool output, from the assistant or from a transcript cannot "
                "be quoted)"
            )
        return found


def _too_short(quote: str) -> bool:
    """Fewer words than a sentence holds; a script written without spaces (Chinese,
    Japanese, Thai) counts its characters, as "我叫李明。" is a whole sentence."""
    unspaced = sum(1 for ch in quote if "\u3040" <= ch <= "\u9fff" or "\u0e00" <= ch <= "\u0e7f")
    if unspaced >= MIN_UNSPACED_QUOTE_CHARS:
        return False
    return len(quote) < MIN_QUOTE_CHARS or len(quote.split()) < MIN_QUOTE_WORDS


def _find(source: Source, wanted: str) -> QuoteMatch | None:
    text = source.message.content
    start = text.find(wanted)
    if start >= 0:
        end = start + len(wanted)
    else:
        # The same words with different spacing (a model that folded a line break).
        pattern = r"\s+".join(re.escape(w) for w in wanted.split())
        hit = re.search(pattern, text)
        if hit is None:
            return None
        start, end = hit.start(), hit.end()
    keys = keys_for_span(source.conversation_id, source.message.id, text, start, end)
    return QuoteMatch(source, start, end, text[start:end], keys)
