"""One memory entry: a Markdown file about one subject, readable and editable by hand.

    ---
    kind: fact                 fact | lesson | note (a file written by hand has no header)
    origin: auto               auto (a fact accepted from a suggestion) | agent (a lesson) | user
    keys: 1f0c…, 9a2e…         the sentence keys of the quoted user words
    source: conversation C message M
    suggestion: s-1a2b3c4d     the suggestion it was accepted from
    ---
    The user prefers tabs over spaces.

    > I always want tabs, never spaces.

A fact holds the user's own words as a quote (`> ` lines) beside a one-line statement; a
lesson is the agent's proposal, accepted by the person. The header is a handful of
`key: value` lines rather than YAML, so a hand edit cannot break it in surprising ways, and
a file without one is a note in the person's own words.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.memory.layout import Scope

EntryKind = Literal["fact", "lesson", "note"]
ENTRY_KINDS: tuple[str, ...] = ("fact", "lesson", "note")
MAX_ENTRY_CHARS = 4_000


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class EntryFields:
    kind: EntryKind = "note"
    origin: str = "user"
    keys: tuple[str, ...] = ()
    source: str = ""
    suggestion: str = ""
    statement: str = ""
    quotes: tuple[str, ...] = ()
    body: str = ""


@dataclass(frozen=True)
class MemoryEntry:
    scope: Scope
    subject: str
    path: Path
    text: str
    fields: EntryFields

    @property
    def canonical(self) -> str:
        return f"{self.scope.key}/{self.subject}.md"

    @property
    def hash(self) -> str:
        return content_hash(self.text)

    @property
    def kind(self) -> EntryKind:
        return self.fields.kind

    @property
    def first_line(self) -> str:
        return self.fields.statement


def parse_entry(text: str) -> EntryFields:
    """The fields of an entry file; anything unexpected falls back to a hand-written note."""
    header: dict[str, str] = {}
    body = text
    normalized = text.replace("\r\n", "\n")
    if normalized.startswith("---\n"):
        end = normalized.find("\n---", 4)
        if end >= 0:
            for line in normalized[4:end].splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    header[key.strip().lower()] = value.strip()
            rest = normalized[end + 4 :]
            body = rest[1:] if rest.startswith("\n") else rest
    else:
        body = normalized
    kind_text = header.get("kind", "note")
    kind: EntryKind = kind_text if kind_text in ENTRY_KINDS else "note"  # type: ignore[assignment]
    keys = tuple(k.strip() for k in header.get("keys", "").split(",") if k.strip())
    statement = ""
    quotes: list[str] = []
    current: list[str] = []
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(">"):
            current.append(stripped[1:].strip())
            continue
        if current:
            quotes.append("\n".join(current))
            current = []
        if not statement and stripped and not stripped.startswith("#"):
            statement = stripped
        elif not statement and stripped.startswith("#"):
            statement = stripped.lstrip("#").strip()
    if current:
        quotes.append("\n".join(current))
    if not statement and quotes:
        statement = quotes[0].splitlines()[0]
    return EntryFields(
        kind=kind,
        origin=header.get("origin", "user" if not header else "agent"),
        keys=keys,
        source=header.get("source", ""),
        suggestion=header.get("suggestion", ""),
        statement=statement,
        quotes=tuple(quotes),
        body=body,
    )


def render_entry(
    *,
    kind: EntryKind,
    origin: str,
    statement: str,
    quotes: tuple[str, ...] = (),
    keys: tuple[str, ...] = (),
    source: str = "",
    suggestion: str = "",
) -> str:
    """The file text for an entry; `parse_entry(render_entry(...))` gives the fields back."""
    header = [f"kind: {kind}", f"origin: {origin}"]
    if keys:
        header.append(f"keys: {', '.join(keys)}")
    if source:
        header.append(f"source: {_one_line(source)}")
    if suggestion:
        header.append(f"suggestion: {suggestion}")
    parts = ["---", *header, "---", _one_line(statement).lstrip(">").strip()]
    for quote in quotes:
        parts.append("")
        parts.extend(f"> {line}".rstrip() for line in quote.splitlines() or [""])
    return "\n".join(parts) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())
