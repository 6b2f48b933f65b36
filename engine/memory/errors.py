"""What can go wrong in memory.

A refused write is part of the conversation, not a crash: the memory tools turn every
`MemoryRefused` into an error result the model reads (the quote was not found, the text looks
like a secret, the sentence was revoked). The rest are for the store, the queue and the CLI.

    MemoryStoreError
     ├── MemoryRefused            a write the rules do not allow
     │    ├── QuoteRejected       the quote is not an exact span of an authenticated user message
     │    ├── SensitiveContent    the text looks like a secret (key, password, token, ...)
     │    ├── RevokedQuote        the quoted sentence was corrected or forgotten
     │    ├── BadSubject          the subject or scope breaks the naming rules
     │    ├── EchoedLesson        a lesson repeats a tool result's text
     │    └── EntryConflict       the entry exists, is missing, or changed since it was read
     ├── ScopeUnreadable          a scope folder could not be listed (logged and skipped)
     ├── UnknownSuggestion        no waiting suggestion has that ID
     ├── UnknownEntry             no memory file at that path
     └── ClaimUnavailable         a reflection found nothing new to claim
"""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base of the memory area's errors."""


class MemoryRefused(MemoryStoreError):
    """A create, amend, delete or rename the rules refuse; nothing was written."""


class QuoteRejected(MemoryRefused):
    """The quote is not an exact span of one of the authenticated user messages."""


class SensitiveContent(MemoryRefused):
    """The text looks like a secret; memory never holds one."""


class RevokedQuote(MemoryRefused):
    """The quoted sentence belongs to a claim the user corrected or forgot."""


class BadSubject(MemoryRefused):
    """The subject (file name) or scope is not one memory accepts."""


class EchoedLesson(MemoryRefused):
    """A lesson repeats a tool result's text: data, not the agent's experience."""


class EntryConflict(MemoryRefused):
    """The entry exists already, is missing, or changed since it was read or suggested."""


class ScopeUnreadable(MemoryStoreError):
    """A scope folder could not be listed or read."""


class UnknownSuggestion(MemoryStoreError):
    """No waiting suggestion has that ID (accepted, rejected or never queued)."""


class UnknownEntry(MemoryStoreError):
    """No memory file at that path."""


class ClaimUnavailable(MemoryStoreError):
    """A reflection or learn pass found no unclaimed messages."""
