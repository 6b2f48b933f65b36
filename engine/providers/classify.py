"""The one place that turns what went wrong on the wire into `errors.ProviderError`s.

Every HTTP engine fails in its own dialect (Ollama's `{"error": "..."}`, llama-server's typed
`{"error": {"type": ...}}`, vLLM's two envelopes, SGLang's flat one) and through the same
transport failures. Providers hand both to this module so the rest of Brim sees five kinds
of failure, each with a message that names the engine and its URL and never a header or a
credential (an error body's secrets are redacted before any message holds them).
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

import httpx

from engine.providers.engine_text import clean
from engine.providers.errors import (
    ContextOverflow,
    EngineUnreachable,
    KvPoolFull,
    ModelNotFound,
    ProtocolError,
    ProviderError,
    ServerError,
    ThinkingUnsupported,
    ToolsUnsupported,
)
from engine.redaction import redacted

# Each engine's refusal of a request that carries tools, and what would make it take them.
TOOLS_REFUSALS: tuple[tuple[str, str], ...] = (
    # vLLM without tool calling switched on (`"auto" tool choice requires …`)
    (
        "enable-auto-tool-choice",
        "start vLLM with --enable-auto-tool-choice and the --tool-call-parser for this model",
    ),
    ("tool-call-parser", "start the server with the --tool-call-parser for this model"),
    # llama-server started without its Jinja chat templates
    ("requires --jinja", "start llama-server with --jinja"),
    # Ollama, for a model whose template has no tools
    ("does not support tools", "pick a model that lists tools in `ollama show`"),
)

# Wording each engine has used (across versions) for "the prompt is longer than the window".
OVERFLOW_PATTERNS: tuple[str, ...] = (
    "maximum context length",  # vLLM (both envelopes), OpenAI-style servers
    "context length is only",  # vLLM
    "longer than the maximum model length",  # vLLM v1 engine
    "is longer than the model's context length",  # SGLang
    "exceeds the available context size",  # llama-server
    "exceed_context_size_error",  # llama-server error type
    "context shift",  # older llama-server: "... or enable context shift"
    # Ollama, three ways (checked in its source): the old runners with truncate:false ("the
    # input length exceeds the context length"), 0.30+ with shift off when even the
    # truncated prompt is too long ("the prompt is longer than the context length currently
    # available to the model; ..."), and 0.30+ with truncate:false, which passes
    # llama-server's own body on as its error text (matched above, numbers and all).
    "exceeds the context length",
    # vLLM 0.32 for a prompt of exactly the window: the room it leaves for the answer is 0
    # (checked on the real server: even without max_tokens in the request)
    "max_tokens must be at least 1, got 0",
    "longer than the context length",
    "exceeds the context window",
    "context_length_exceeded",  # OpenAI-compatible error code
    "exceed context window",  # llama-cpp-python
)

# llama-server's words when a decode finds no room left in its KV cache: with slots sharing
# one unified pool, the requests in flight together outgrew it (tools/server/server-context.cpp:
# a 500 `server_error`, or the same object as an in-stream `data: {"error": ...}` line once
# the answer streams). "Input prompt is too big compared to KV size" is the same place in
# builds before 2025. Neither is the prompt-too-long refusal (`exceed_context_size_error`).
POOL_EXHAUSTED_PATTERNS: tuple[str, ...] = (
    "context size has been exceeded",
    "too big compared to kv size",
)

MODEL_MISSING_PATTERNS: tuple[str, ...] = (
    "not found",
    "does not exist",
    "no such model",
    "unknown model",
)

_MAX_MESSAGE_CHARS = 300

# The numbers engines print in their refusals, as named groups: `prompt` (the prompt's size
# as the engine counted it), `window`, `output` (the max_tokens it weighed with the prompt)
# and `floor` (a size the prompt is at least: the engine stopped counting there).
_NUMBER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # llama-server
        r"request \((?P<prompt>\d+) tokens\) exceeds the available context size \((?P<window>\d+)",
        # SGLang, the prompt alone (refused from prompt >= window)
        r"input \((?P<prompt>\d+) tokens\) is longer than the model's context length "
        r"\((?P<window>\d+)",
        # SGLang, prompt + max_tokens (refused from a total >= window)
        r"maximum context length of (?P<window>\d+) tokens\. You requested a total of \d+ "
        r"tokens: (?P<prompt>\d+) tokens from the input messages and (?P<output>\d+) tokens "
        r"for the completion",
        # vLLM v1 engine
        r"prompt \(length (?P<prompt>\d+)\) is longer than the maximum model length of "
        r"(?P<window>\d+)",
        r"maximum context length is (?P<window>\d+) tokens",  # vLLM, OpenAI-style servers
        # vLLM 0.10-0.11: "'max_tokens' or 'max_completion_tokens' is too large: M. ..."
        r"max_completion_tokens' is too large: (?P<output>\d+)",
        r"your request has (?P<prompt>\d+) input tokens",
        # vLLM before 0.10: "you requested T tokens (P in the messages, M in the completion)"
        r"\((?P<prompt>\d+) in the messages(?:, (?P<output>\d+) in the completion)?",
        r"you requested (?P<prompt>\d+) tokens in the messages",
        r"messages resulted in (?P<prompt>\d+) tokens",
        r"context length is only (?P<window>\d+)",
        # vLLM now: it tokenizes at most one token past what fits (window - max_tokens + 1),
        # so the count it names is where it stopped, not the prompt's size.
        r"You passed (?P<floor>\d+) input tokens and requested (?P<output>\d+) output tokens",
        # vLLM 0.2x: "... requested M output tokens and your prompt contains [at least] P ..."
        r"requested (?P<output>\d+) output tokens and your prompt contains "
        r"(?:at least (?P<floor>\d+)|(?P<prompt>\d+)) input tokens",
        # vLLM 0.32, the prompt alone past the window: "However, your prompt contains at least
        # P input tokens, which exceeds this limit even without any output tokens."
        r"However, your prompt contains at least (?P<floor>\d+) input tokens, which exceeds",
    )
)


class OverflowNumbers(NamedTuple):
    """What an overflow refusal says in figures (None: it did not say)."""

    prompt: int | None = None
    window: int | None = None
    output: int | None = None
    floor: int | None = None


def safe_url(url: str) -> str:
    """The URL as it may appear in a message: no user, password, query or fragment."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _shorten(text: str) -> str:
    """An engine's words as a message may carry them: cleaned, on one line, without the
    secrets they held (a 401 that echoes the key), at most _MAX_MESSAGE_CHARS long (cut
    after the redaction, so no key cut in two is left for the detector to miss)."""
    text = redacted(" ".join(clean(text[: _MAX_MESSAGE_CHARS * 16]).split()))
    if len(text) > _MAX_MESSAGE_CHARS:
        return text[: _MAX_MESSAGE_CHARS - 1] + "…"
    return text


# An engine's integer beyond this is no quantity it can mean (JSON's 1e308 is an integer
# float; as an int it overflows the first float arithmetic that meets it).
_MAX_INT = 2**63 - 1

# llama.cpp, vLLM and Ollama all count tokens in 32-bit integers; a count above that is a
# broken engine, not a long prompt.
MAX_TOKEN_COUNT = 2**31 - 1


def as_int(value: Any) -> int | None:
    """An integer field from an engine's JSON; anything else (absent, null, text, a number
    no engine can mean) is None."""
    if isinstance(value, bool):
        return None
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 20:
        number = int(value.strip())
    if number is None or abs(number) > _MAX_INT:
        return None
    return number


def as_window(value: Any) -> int | None:
    """A context window (or slot count) an engine reported: a whole number in
    1..MAX_TOKEN_COUNT, else None: a window of -5 or 1e308 is one the engine did not
    really state, and Brim resolves the window as if it had said nothing."""
    number = as_int(value)
    return number if number is not None and 0 < number <= MAX_TOKEN_COUNT else None


class BadCount(ValueError):
    """An engine's token count that cannot be one; the message names the field."""


def as_count(value: Any, field: str) -> int | None:
    """A token count an engine reported: None when it reported none (absent or null), the
    count when it is a whole number in 0..MAX_TOKEN_COUNT, else BadCount (the engine sent
    something no tokenizer counts, and the numbers must not reach the context ladder)."""
    if value is None:
        return None
    number = as_int(value)
    if number is None or not 0 <= number <= MAX_TOKEN_COUNT:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
        raise BadCount(f"a token count that is not one ({field}: {shown})")
    return number


def parse_body(body: str | bytes) -> Any:
    """The body as JSON where it is JSON, else the text itself."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        return json.loads(text)
    except ValueError:
        return text


def _embedded_error(text: str) -> dict[str, Any] | None:
    """The error object of a JSON error body carried as text, `{"error": {...}}`; None for
    any other text."""
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > 64_000:
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    inner = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return inner
    return None


def error_fields(payload: Any) -> dict[str, Any]:
    """The error object inside any of the engines' envelopes (empty when there is none).

    `{"error": "text"}` (Ollama), `{"error": {...}}` (llama-server, vLLM >= 0.10.1),
    `{"object": "error", "message": ...}` (vLLM before, SGLang), `{"detail": ...}` (FastAPI).
    """
    if isinstance(payload, str):
        return {"message": payload} if payload.strip() else {}
    if not isinstance(payload, dict):
        return {}
    inner = payload.get("error")
    if isinstance(inner, dict):
        return inner
    if isinstance(inner, str):
        # Ollama 0.30+ passes its llama-server's error body on as the text of its own.
        nested = _embedded_error(inner)
        return nested if nested is not None else {"message": inner}
    if payload.get("object") == "error" or "message" in payload:
        return payload
    detail = payload.get("detail")
    if isinstance(detail, str):
        return {"message": detail}
    if detail is not None:
        return {"message": json.dumps(detail)}
    return {}


def error_message(payload: Any) -> str:
    fields = error_fields(payload)
    message = fields.get("message")
    if isinstance(message, str) and message.strip():
        return _shorten(message)
    if isinstance(payload, str):
        return _shorten(payload)
    return ""


def looks_like_overflow(payload: Any) -> bool:
    fields = error_fields(payload)
    if fields.get("type") == "exceed_context_size_error":
        return True
    haystack = " ".join(str(fields.get(key, "")) for key in ("message", "type", "code")).lower()
    return any(pattern in haystack for pattern in OVERFLOW_PATTERNS)


def looks_like_pool_exhaustion(payload: Any) -> bool:
    fields = error_fields(payload)
    if fields.get("type") == "exceed_context_size_error":
        return False
    message = str(fields.get("message", "")).lower()
    return any(pattern in message for pattern in POOL_EXHAUSTED_PATTERNS)


def overflow_numbers(payload: Any) -> OverflowNumbers:
    """The figures of an overflow refusal, as the engine stated them, where it did."""
    fields = error_fields(payload)
    found: dict[str, int | None] = {
        "prompt": as_int(fields.get("n_prompt_tokens")),
        "window": as_int(fields.get("n_ctx")),
        "output": None,
        "floor": None,
    }
    message = str(fields.get("message", ""))
    for pattern in _NUMBER_PATTERNS:
        match = pattern.search(message)
        if not match:
            continue
        for name, value in match.groupdict().items():
            if value is not None and found[name] is None:
                found[name] = int(value)
    return OverflowNumbers(**found)


def classify_payload(
    payload: Any,
    *,
    engine: str,
    url: str,
    model: str | None = None,
    status: int | None = None,
) -> ProviderError:
    """An error body (HTTP status >= 400, or an error delivered inside a 200 stream)."""
    message = error_message(payload) or "no details"
    where = f"{engine} at {safe_url(url)}"
    http = f"HTTP {status}" if status and status != 200 else "mid-stream"
    if looks_like_pool_exhaustion(payload) and (status is None or status in (200, 500)):
        return KvPoolFull(
            f"{where} ran out of the KV cache its slots share ({http}: {message})", status=status
        )
    if looks_like_overflow(payload) and (status is None or status in (200, 400, 413, 422)):
        numbers = overflow_numbers(payload)
        return ContextOverflow(
            f"{where} rejected the prompt as longer than its context window ({message})",
            status=status,
            prompt_tokens=numbers.prompt,
            window=numbers.window,
            output_tokens=numbers.output,
            prompt_floor=numbers.floor if numbers.prompt is None else None,
        )
    lowered = message.lower()
    for pattern, hint in TOOLS_REFUSALS:
        if pattern in lowered and (status is None or 400 <= status < 600):
            return ToolsUnsupported(
                f"{where} will not take tools for this model ({message})", hint=hint, status=status
            )
    # Ollama, asked to think by a model without the `thinking` capability (server/routes.go
    # ChatHandler: `"<model>" does not support thinking`).
    if "does not support thinking" in lowered and (status is None or 400 <= status < 500):
        name = repr(model) if model else "this model"
        return ThinkingUnsupported(
            f"{name} cannot think: {where} refused to have it reason before answering "
            f"({message}). Set the agent's reasoning to off, or leave it unset.",
            status=status,
        )
    mentions_model = "model" in lowered and any(p in lowered for p in MODEL_MISSING_PATTERNS)
    if status == 404 or (mentions_model and status in (None, 200, 400, 422)):
        name = f" {model!r}" if model else ""
        return ModelNotFound(f"{where} does not have the model{name} ({message})", status=status)
    if status in (401, 403):
        return ServerError(
            f"{where} refused the request ({http}: {message}); check the API key", status=status
        )
    if status is not None and 400 <= status < 500:
        error = ServerError(f"{where} rejected the request ({http}): {message}", status=status)
        error.retryable = False
        return error
    return ServerError(f"{where} failed ({http}): {message}", status=status)


def classify_http(
    status: int, body: str | bytes, *, engine: str, url: str, model: str | None = None
) -> ProviderError:
    """An HTTP response whose status says it failed."""
    return classify_payload(parse_body(body), engine=engine, url=url, model=model, status=status)


def classify_transport(exc: BaseException, *, engine: str, url: str) -> ProviderError:
    """A failure below HTTP: nothing answered, or the connection broke or stalled."""
    where = f"{engine} at {safe_url(url)}"
    if isinstance(exc, httpx.ConnectTimeout):
        return EngineUnreachable(f"cannot reach {where}: the connection timed out")
    if isinstance(exc, httpx.ConnectError | ConnectionRefusedError):
        reason = "connection refused"
        text = str(exc).lower()
        if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
            reason = "the host name does not resolve"
        return EngineUnreachable(f"cannot reach {where}: {reason}")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return EngineUnreachable(f"cannot reach {where}: not a valid http(s) URL")
    if isinstance(exc, httpx.ReadTimeout):
        return ServerError(f"{where} stopped answering (no data before the read timeout)")
    if isinstance(exc, httpx.WriteTimeout | httpx.PoolTimeout):
        return ServerError(f"{where} did not accept the request in time")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return ServerError(
            f"{where} closed the connection before the answer was complete "
            "(the engine may have crashed or been stopped)"
        )
    if isinstance(exc, ConnectionError):  # the ollama client wraps connect failures in this
        return EngineUnreachable(f"cannot reach {where}: connection refused")
    if isinstance(exc, httpx.DecodingError):
        return ProtocolError(f"{where} sent a body Brim cannot decode")
    if isinstance(exc, httpx.HTTPError):
        return ServerError(f"{where} failed: {type(exc).__name__}")
    return ServerError(f"{where} failed: {type(exc).__name__}")


def protocol_error(what: str, *, engine: str, url: str) -> ProtocolError:
    return ProtocolError(f"{engine} at {safe_url(url)} sent {what}")
