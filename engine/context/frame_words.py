"""Brim's own words around a checkpoint, in the language the user writes.

The checkpoint's face (engine/context/model_face.py), the note after it and the line that
quotes the user's first request are the only sentences of a request Brim writes itself in a
conversation. In English they were sent to every conversation, and a small model answers
the language it last read. So each is read from resources/language/frames.toml in the
conversation's language (engine/language.py, from the user's own words), English where a
language has no table or a key is missing.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from functools import cache

from engine.language import detect_language
from engine.resources import resource_text

DEFAULT = "en"


@cache
def _tables() -> dict[str, dict[str, str]]:
    data = tomllib.loads(resource_text("language", "frames.toml"))
    return {lang: {k: str(v) for k, v in table.items()} for lang, table in data.items()}


@cache
def quoted_request() -> re.Pattern[str]:
    """Brim's line quoting the user's first request, as any table writes it ("The user
    asked: “…”", "L'utilisateur a demandé : « … »"): the request is group "q"."""
    shapes = {
        table[key]
        for table in _tables().values()
        for key in ("asked", "said")
        if "{}" in table.get(key, "")
    }
    alternatives = [
        re.escape(head) + rf"(?P<q{i}>.*)" + re.escape(tail)
        for i, (head, tail) in enumerate(shape.split("{}", 1) for shape in sorted(shapes))
    ]
    return re.compile("^(?:" + "|".join(alternatives) + ")$")


def quoted_text(line: str) -> str | None:
    """The request a quoted-request line quotes, or None when `line` is not one."""
    match = quoted_request().match(line)
    if match is None:
        return None
    return next(v for k, v in match.groupdict().items() if v is not None)


def opens_with_quote(line: str) -> bool:
    """Whether `line` opens as Brim's quoted request does ("Der Nutzer fragte: “…"), even
    where a cap cut its end."""
    heads = {
        table[key].split("{}", 1)[0]
        for table in _tables().values()
        for key in ("asked", "said")
        if "{}" in table.get(key, "")
    }
    return line.startswith(tuple(heads))


def frame_word(key: str, language: str = DEFAULT) -> str:
    """One of Brim's lines (`key` of frames.toml) in `language`, English when it has none."""
    tables = _tables()
    return tables.get(language, {}).get(key) or tables[DEFAULT][key]


def languages() -> tuple[str, ...]:
    """The languages with a table."""
    return tuple(_tables())


def language_of(texts: Iterable[str]) -> str:
    """The language Brim's lines take for a conversation whose user wrote `texts`: the one
    detected, where it has a table; English otherwise."""
    found = detect_language(texts)
    return found if found in _tables() else DEFAULT
