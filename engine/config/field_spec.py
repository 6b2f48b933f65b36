"""What one agent setting is: its type, its bounds, and how a value of it is checked, read
from the editor's text and shown again.

The settings themselves are listed in engine/config/schema.py; this module knows none of
them by name but the two whose text has rules of its own (an agent's name, an environment
variable's).
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any, Literal
from urllib.parse import urlsplit

from engine.config.mcp_servers import parse_servers

FieldType = Literal["str", "text", "url", "int", "float", "choice", "secret", "mcp"]

MAX_WINDOW = 100_000_000  # far above any served window; stops absurd values early
MAX_NAME_CHARS = 100
MAX_SECRET_CHARS = 4_096
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FieldProblem(ValueError):
    """A value a field refuses, with the reason a person can act on."""


@dataclass(frozen=True)
class FieldSpec:
    name: str  # the attribute on AgentConfig
    type: FieldType
    default: Any
    label: str  # short, for the editor
    description: str  # one or two sentences, for the template and the editor's tooltip
    key: tuple[str, ...] = ()  # place in the TOML file; defaults to (name,)
    required: bool = False
    nullable: bool = False  # None allowed (the key is absent); `unset` says what that means
    unset: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()  # the engines it applies to; empty: all
    group: str = "general"
    example: Any = None  # shown, commented out, in a new agent file

    @property
    def toml_key(self) -> str:
        return ".".join(self.path)

    @property
    def path(self) -> tuple[str, ...]:
        return self.key or (self.name,)

    def applies_to(self, provider: str) -> bool:
        return not self.providers or provider in self.providers

    def expectation(self) -> str:
        """What a valid value looks like, phrased to follow 'must be'."""
        if self.type == "int":
            base = "an integer"
        elif self.type == "float":
            base = "a number"
        elif self.type == "choice":
            return "one of " + ", ".join(self.choices)
        elif self.type == "url":
            return "an http:// or https:// URL"
        elif self.type == "text":
            return "a string"
        elif self.type == "secret":
            return "a key of printable ASCII characters without spaces"
        elif self.type == "mcp":
            return "an array of [[mcp]] tables"
        else:
            return "a single-line string"
        lo, hi = self.minimum, self.maximum
        # MAX_WINDOW only stops absurd windows: not worth naming. Any other bound is.
        if lo is not None and hi is not None and (self.type == "float" or hi != MAX_WINDOW):
            return f"{base} from {_num(lo)} to {_num(hi)}"
        if lo is not None:
            return f"{base} ≥ {_num(lo)}"
        if hi is not None:
            return f"{base} ≤ {_num(hi)}"
        return base

    def _refuse(self, value: Any, extra: str = "") -> FieldProblem:
        if self.type == "secret":  # a key is never repeated back, not even a wrong one
            shown = "a string" if isinstance(value, str) else describe_value(value)
            return FieldProblem(f"must be {self.expectation()}, got {shown} that is not")
        return FieldProblem(f"must be {self.expectation()}, got {describe_value(value)}{extra}")

    def validate(self, value: Any) -> Any:
        """The value as AgentConfig holds it, or `FieldProblem` saying why not.

        Values come typed (from TOML or code): the string "8192" is not an integer here, so a
        quoted number in a file is reported rather than guessed at. Empty strings in nullable
        fields mean "unset" (None)."""
        if value is None:
            if self.nullable:
                return None
            raise FieldProblem("must be set" if self.required else f"must be {self.expectation()}")
        if isinstance(value, str) and value == "" and self.nullable:
            return None
        if self.type == "mcp":
            try:
                return parse_servers(value)
            except ValueError as exc:
                raise FieldProblem(str(exc)) from None
        if self.type == "int":
            return self._check_range(self._check_int(value), value)
        if self.type == "float":
            return self._check_range(self._check_float(value), value)
        if not isinstance(value, str):
            raise self._refuse(value)
        if self.type == "choice":
            if value not in self.choices:
                raise self._refuse(value, _did_you_mean(value, self.choices))
            return value
        if self.type == "url":
            return self._check_url(value)
        if self.type == "secret":
            # It goes into an HTTP header: printable ASCII only, so it can neither break the
            # request nor smuggle a second header in.
            if (
                not value
                or len(value) > MAX_SECRET_CHARS
                or not all("!" <= c <= "~" for c in value)
            ):
                raise self._refuse(value)
            return value
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise FieldProblem("must be valid Unicode text (it holds a lone surrogate)")
        if self.type == "str":
            if self.required and not value.strip():
                raise FieldProblem("must not be empty")
            bad = next((c for c in value if _is_control(c)), None)
            if bad is not None:
                raise FieldProblem(f"must be a single line without control characters ({bad!r})")
            if self.name == "name" and len(value) > MAX_NAME_CHARS:
                raise FieldProblem(f"must be at most {MAX_NAME_CHARS} characters")
            if self.name == "api_key_env" and not _ENV_NAME.fullmatch(value):
                raise FieldProblem(
                    "must be the name of an environment variable (letters, digits and _, "
                    f"not starting with a digit), got {describe_value(value)}"
                )
        return value

    def _check_int(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._refuse(value)
        return value

    def _check_float(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._refuse(value)
        number = float(value)
        if not math.isfinite(number):
            raise self._refuse(value)
        return number

    def _check_range(self, number: float, raw: Any) -> Any:
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise self._refuse(raw)
        return number

    def _check_url(self, value: str) -> str:
        text = value.strip()
        try:
            parts = urlsplit(text)
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            raise self._refuse(value) from None
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise self._refuse(value)
        if parts.username is not None or parts.password is not None:
            # Said without repeating the URL: it holds a password.
            raise FieldProblem(
                "must not hold a user name or password (user:password@host): Brim refuses "
                "them rather than send them as Basic auth, which vLLM and SGLang do not "
                "accept. Put the key in api_key_env (or api_key); it is sent as "
                "Authorization: Bearer"
            )
        if any(_is_control(c) or c.isspace() for c in text):
            raise self._refuse(value)
        return text

    def parse_text(self, text: str) -> Any:
        """A value typed into the editor: blank means unset (nullable) or the default."""
        stripped = text.strip()
        if self.type == "text":
            return self.validate(text)
        if not stripped:
            if self.nullable:
                return None
            if self.required:
                raise FieldProblem("must not be empty")
            return self.default
        if self.type == "int":
            try:
                number: Any = int(stripped.replace("_", "").replace(",", ""))
            except ValueError:
                raise self._refuse(stripped) from None
            return self.validate(number)
        if self.type == "float":
            try:
                number = float(stripped)
            except ValueError:
                raise self._refuse(stripped) from None
            return self.validate(number)
        return self.validate(stripped)

    def format_text(self, value: Any) -> str:
        """The editor's text for a value (the inverse of `parse_text`)."""
        if value is None:
            return ""
        if self.type == "float":
            return repr(float(value))
        return str(value)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) >= 1 else f"{x:g}"


def _is_control(c: str) -> bool:
    """Control characters, line and paragraph separators, lone surrogates."""
    return unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")


def _did_you_mean(value: str, options: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(value.lower(), list(options), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def describe_value(value: Any) -> str:
    """A value as the user wrote it in TOML, short enough for a one-line message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return "'" + shown.encode("unicode_escape").decode("ascii").replace("'", "\\'") + "'"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, datetime | date | time):
        return "a date/time"
    return type(value).__name__


def suggest_key(key: str, known: list[str]) -> str:
    """' (did you mean X?)' for a mistyped key, or ''."""
    return _did_you_mean(key, known)
