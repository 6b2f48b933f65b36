"""Every agent setting, described once as data.

The loader, the validator, the default agent file and the editor dialog all read this one
list, so a setting cannot be valid in the editor and rejected on load, or documented in the
template with a default the loader does not use. Adding a setting means adding a `FieldSpec`
here and the matching attribute on `AgentConfig` (a test keeps the two in step).

A field's `key` is its place in the TOML file: most are top-level keys, the run budget lives
in a `[budget]` table (`[budget] max_tokens = 128000`).
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

from engine.config.mcp_servers import parse_servers
from engine.config.sampling_fields import sampling_fields
from engine.providers.base import PROVIDER_KINDS
from engine.resources import prompt

FieldType = Literal["str", "text", "url", "int", "float", "choice", "secret", "mcp"]

MAX_WINDOW = 100_000_000  # far above any served window; stops absurd values early
MAX_NAME_CHARS = 100
MAX_SECRET_CHARS = 4_096
FLASH_ATTN_MODES = ("auto", "on", "off")
KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")  # the types engine/fit/kv.py counts
# What Brim does when the pin does not stay on the GPU (engine/window/fit_policy.py).
SPILL_POLICIES = ("warn", "shrink", "ask")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The agent's own instructions unless its file says otherwise (resources/prompts/system.txt).
DEFAULT_SYSTEM_PROMPT = prompt("system")


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


def quantized_cache_problem(kv_type: str) -> str:
    """Why a quantized KV cache is refused with flash attention off (llama.cpp quantizes the
    V cache only inside its flash-attention kernels)."""
    return (
        f"{kv_type} quantizes the V cache, which llama.cpp does only with flash attention: "
        'set flash_attn to "auto" or "on", or kv_cache_type to "f16"'
    )


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


AGENT_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec(
        "name",
        "str",
        default=None,
        required=True,
        label="Name",
        description="What the agent is called in Brim and in `brim chat --agent NAME`.",
    ),
    FieldSpec(
        "provider",
        "choice",
        default="embedded",
        choices=PROVIDER_KINDS,
        group="engine",
        label="Engine",
        description="The engine that runs the model (embedded runs it inside Brim).",
    ),
    FieldSpec(
        "base_url",
        "url",
        default=None,
        nullable=True,
        unset="the engine's usual local address",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="Base URL",
        example="http://127.0.0.1:11434",
        description="Where the engine listens.",
    ),
    FieldSpec(
        "api_key_env",
        "str",
        default=None,
        nullable=True,
        unset="no key from the environment",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="API key variable",
        example="BRIM_VLLM_KEY",
        description=(
            "The environment variable that holds the engine's API key (a server started "
            "with --api-key); sent as Authorization: Bearer, never written anywhere."
        ),
    ),
    FieldSpec(
        "api_key",
        "secret",
        default=None,
        nullable=True,
        unset="no key",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="API key",
        description=(
            "The engine's API key itself, sent as Authorization: Bearer. Prefer api_key_env: "
            "a key here lives in this file in plain text."
        ),
    ),
    FieldSpec(
        "request_timeout_s",
        "float",
        default=None,
        nullable=True,
        unset="600 seconds (a big model may think for minutes before its first token)",
        minimum=0.1,
        maximum=86400.0,
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="Request timeout (s)",
        example=600.0,
        description="How long to wait for the engine's next bytes before calling it hung.",
    ),
    FieldSpec(
        "model",
        "str",
        default="",
        group="engine",
        label="Model",
        description=(
            "The model to run: a model name for servers, a GGUF file path for the embedded "
            "engine (empty: the default model for embedded, the only served model for a "
            "server that serves one)."
        ),
    ),
    FieldSpec(
        "n_threads",
        "int",
        default=None,
        nullable=True,
        unset="chosen by llama.cpp",
        minimum=1,
        maximum=1024,
        providers=("embedded",),
        group="engine",
        label="CPU threads",
        example=4,
        description="Threads the embedded engine uses.",
    ),
    FieldSpec(
        "gpu_layers",
        "int",
        default=None,
        nullable=True,
        unset="all layers when the installed llama.cpp can offload, else 0",
        minimum=0,
        maximum=100_000,
        providers=("embedded",),
        group="engine",
        label="GPU layers",
        example=99,
        description=(
            "Layers the embedded engine puts on the GPU (more than the model has: all of "
            "them, the output head too). 0 keeps it on the CPU."
        ),
    ),
    FieldSpec(
        "flash_attn",
        "choice",
        default="auto",
        choices=FLASH_ATTN_MODES,
        providers=("embedded",),
        group="engine",
        label="Flash attention",
        description=(
            "Flash attention for the embedded engine: auto (on, where llama.cpp has it), on "
            "or off. A quantized KV cache needs it."
        ),
    ),
    FieldSpec(
        "kv_cache_type",
        "choice",
        default="f16",
        choices=KV_CACHE_TYPES,
        providers=("embedded",),
        group="engine",
        label="KV cache type",
        description=(
            "How the embedded engine stores its KV cache: f16, q8_0 (about half the memory) "
            "or q4_0 (about a quarter). The quantized types need flash attention."
        ),
    ),
    FieldSpec(
        "num_ctx",
        "int",
        default=None,
        nullable=True,
        unset="the window the engine reports",
        minimum=256,
        maximum=MAX_WINDOW,
        group="window",
        label="Context window pin (num_ctx)",
        example=8192,
        description=(
            "Pin the context window. Ollama receives it on every request; for the other "
            "engines it is what Brim accounts against (never above what the engine serves)."
        ),
    ),
    FieldSpec(
        "on_spill",
        "choice",
        default="warn",
        choices=SPILL_POLICIES,
        group="window",
        label="When the pin spills off the GPU",
        description=(
            "What Brim does when the engine puts part of the model on the CPU at the pin: "
            "warn (keep the pin and say what spilled), shrink (lower the pin to the largest "
            "window that stays on the GPU, and say so) or ask (offer both in the "
            "conversation; headless: an event, then warn)."
        ),
    ),
    FieldSpec(
        "max_context_tokens",
        "int",
        default=None,
        nullable=True,
        unset="no ceiling",
        minimum=256,
        maximum=MAX_WINDOW,
        group="window",
        label="Context ceiling",
        example=32768,
        description="A ceiling on the window Brim uses; it only ever lowers it.",
    ),
    FieldSpec(
        "summarizer_model",
        "str",
        default=None,
        nullable=True,
        unset="the agent's own model",
        group="compaction",
        label="Summarizer model",
        example="qwen2.5:3b",
        description="The model that writes compaction summaries.",
    ),
    FieldSpec(
        "compaction_ratio",
        "float",
        default=0.8,
        minimum=0.1,
        maximum=0.99,
        group="compaction",
        label="Compaction ratio",
        description="Compact when a request would fill this share of the window.",
    ),
    FieldSpec(
        "compaction_reserve_tokens",
        "int",
        default=None,
        nullable=True,
        unset="use compaction_ratio",
        minimum=1,
        maximum=MAX_WINDOW,
        group="compaction",
        label="Compaction reserve (tokens)",
        example=16384,
        description="Compact when fewer than this many tokens are left; wins over the ratio.",
    ),
    FieldSpec(
        "max_iterations",
        "int",
        default=None,
        nullable=True,
        unset="no cap",
        minimum=1,
        maximum=100_000,
        group="run",
        label="Iteration cap",
        example=50,
        description="The most model calls one run may make before it stops.",
    ),
    FieldSpec(
        "max_tokens",
        "int",
        default=None,
        nullable=True,
        unset=(
            "a quarter of the context window, at least 512 and at most 4096 tokens (1024 on a "
            "4096-token window)"
        ),
        minimum=0,
        maximum=MAX_WINDOW,
        group="run",
        label="Output cap (tokens)",
        example=4096,
        description=(
            "The most tokens the model may generate in one response; an answer cut there is "
            "marked, and 'continue' gets the rest. 0: no cap but the room the window has left."
        ),
    ),
    *sampling_fields(FieldSpec),  # temperature, top_p, top_k, min_p, repeat_penalty, seed
    FieldSpec(
        "budget_max_tokens",
        "int",
        default=None,
        nullable=True,
        key=("budget", "max_tokens"),
        unset="no cap",
        minimum=0,
        maximum=1_000_000_000,
        group="run",
        label="Run token budget",
        example=128000,
        description=(
            "Token-spend ceiling per run, counted as the engine's new work: prompt tokens not "
            "served from its cache, plus the answer. Unset or 0: no cap."
        ),
    ),
    FieldSpec(
        "system_prompt",
        "text",
        default=DEFAULT_SYSTEM_PROMPT,
        group="prompt",
        label="System prompt",
        description="The agent's own instructions, first in every conversation.",
    ),
    FieldSpec(
        "mcp",
        "mcp",
        default=(),
        group="tools",
        label="MCP servers",
        description=(
            "Model Context Protocol servers whose tools the agent may call: [[mcp]] tables "
            "with a name and a command (stdio) or a url (streamable HTTP); see the README."
        ),
    ),
)

FIELDS_BY_NAME: Mapping[str, FieldSpec] = MappingProxyType({f.name: f for f in AGENT_FIELDS})
FIELDS_BY_KEY: Mapping[tuple[str, ...], FieldSpec] = MappingProxyType(
    {f.path: f for f in AGENT_FIELDS}
)
TABLES: frozenset[str] = frozenset(f.path[0] for f in AGENT_FIELDS if len(f.path) > 1)
