"""Text from an engine, made safe to store and print before anything else sees it.

JSON can carry what UTF-8 cannot: `"\\ud83d"` is valid JSON and decodes to a lone UTF-16
surrogate, which no UTF-8 encoder accepts. An engine that splits an emoji's surrogate pair
across two stream events, or sends half of one, would otherwise leave a string in the
conversation that crashes every later write of it (the database, stdout, an export). So
every provider passes its streamed text through a `StreamText` (pairs split across events
are joined, lone halves become U+FFFD) and any other engine string through `clean`.
A NUL has no meaning in an answer and breaks paths, command lines and C strings: it becomes
U+FFFD too.
"""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"

_SUSPECT = re.compile("[\ud800-\udfff\x00]")
_HIGH = re.compile("[\ud800-\udbff]")


def clean(text: str) -> str:
    """`text` with every surrogate pair joined into its character and every lone surrogate
    (and NUL) replaced by U+FFFD. Text without any is returned as it is (the common case)."""
    if not _SUSPECT.search(text):
        return text
    # UTF-16 with surrogatepass writes pairs as the code units they are; reading it back
    # joins each valid pair and replaces each unpaired unit.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\x00", REPLACEMENT)


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): _clean_value(v) for k, v in value.items()}
    return value


def clean_arguments(arguments: str) -> str:
    """A tool call's arguments: JSON text inside the engine's JSON, so a `\\ud800` escape
    in them survives the first decode and would become a lone surrogate in a path or a
    command when the tool reads them. Cleaned at both levels; arguments that are not JSON
    are left for the tool to refuse. ValueError for arguments nested too deeply to read
    (every later reader of them would fail the same way)."""
    text = clean(arguments)
    try:
        value = json.loads(text)
        cleaned = _clean_value(value)
    except RecursionError:
        raise ValueError("tool call arguments nested too deeply to read") from None
    except ValueError:
        return text
    if "\\u" not in text:  # no escape: the text itself was all there was to clean
        return text
    return json.dumps(cleaned, ensure_ascii=False)


class StreamText:
    """One stream's text decoder: a high surrogate at the end of one event waits for the
    next event, which may start with its low half. `flush` at the end of the stream."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        """The text that is safe to emit now (possibly empty)."""
        if self._pending:
            text, self._pending = self._pending + text, ""
        if not _SUSPECT.search(text):
            return text
        if _HIGH.fullmatch(text[-1]):
            # A trailing high surrogate may be the first half of a pair whose second half
            # starts the next event.
            text, self._pending = text[:-1], text[-1]
        return clean(text)

    def flush(self) -> str:
        """What is still held back, at the end of the stream: a half pair is U+FFFD."""
        pending, self._pending = self._pending, ""
        return clean(pending)
