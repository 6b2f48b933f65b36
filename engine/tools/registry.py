"""The tools the agent may call: their schemas, and one safe way to call them.

The loop asks `schemas()` once per conversation (they are part of the stable prompt prefix,
so they come out in one order, byte for byte, every time) and `call()` for every tool call
the model makes. `call` never raises for a tool's failure: malformed JSON, a missing
argument, a path outside the workspace, a denied approval, a crash inside the tool all come
back as an error result the model can read, shaped and sized like any other. A secret in
a result is redacted before anything sees it (engine/redaction.py).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.redaction import redact
from engine.tools.context import ToolContext
from engine.tools.errors import ToolArgumentError, ToolDenied, ToolError
from engine.tools.shaping import shape_result

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]

_BOOL_WORDS = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]  # a JSON Schema object: properties, required
    handler: Handler
    needs_approval: bool = False
    # Argument names small models use instead of ours ("file_path" for "path").
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Reshapes the parsed arguments before they are checked (for common slips of small
    # models that renaming alone cannot fix).
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema; a fresh copy, so a caller cannot change ours."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(dict(self.parameters)),
            },
        }


@dataclass(frozen=True)
class ToolOutcome:
    content: str  # what enters the history, shaped for a model reader
    truncated: bool = False  # cut to the budget (the whole text stored when it could be)
    chars: int = 0  # length of the full raw result, before shaping
    is_error: bool = False
    denied: bool = False  # the action needed approval and did not get it
    # The secrets taken out of the result before anything saw it: kind -> how many.
    redacted: Mapping[str, int] = field(default_factory=dict)


def parse_arguments(arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The model's arguments as a dict; `ToolArgumentError` when they are not a JSON object."""
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        raise ToolArgumentError("arguments must be a JSON object")
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from exc
    if not isinstance(value, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    return value


def _coerce(name: str, spec: Mapping[str, Any], value: Any) -> Any:
    """One argument checked against its schema; the small slips local models make (a number
    sent as a string) are forgiven, anything else is reported."""
    kind = spec.get("type")
    if kind == "string":
        if isinstance(value, str):
            return value
    elif kind == "integer":
        if isinstance(value, bool):
            pass
        elif isinstance(value, int):
            return value
        elif isinstance(value, float) and value.is_integer():
            return int(value)
        elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return int(value.strip())
    elif kind == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
            return _BOOL_WORDS[value.strip().lower()]
    elif kind in ("object", "array"):
        wanted = dict if kind == "object" else list
        if isinstance(value, str):
            # An object sent as JSON text inside the JSON arguments (double-encoded).
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        if isinstance(value, wanted):
            return value
    else:
        return value
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 60:
        shown = shown[:60] + "…"
    raise ToolArgumentError(f"argument {name!r} must be {_article(kind)} {kind}, got {shown}")


def _article(word: Any) -> str:
    return "an" if str(word)[:1] in "aeiou" else "a"


def check_arguments(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments renamed from known aliases, type-checked, and required ones present.
    Unknown arguments are dropped (a model's extra field is not worth failing a call)."""
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    given = dict(args)
    if tool.prepare is not None:
        given = tool.prepare(given)
    for alias, real in tool.aliases.items():
        if alias in given and real not in given:
            given[real] = given.pop(alias)
    out: dict[str, Any] = {}
    for name, spec in props.items():
        if name in given and given[name] is not None:
            out[name] = _coerce(name, spec, given[name])
    missing = [n for n in tool.parameters.get("required", ()) if n not in out]
    if missing:
        wanted = ", ".join(f"{n} ({props.get(n, {}).get('type', 'value')})" for n in missing)
        raise ToolArgumentError(f"{tool.name} needs {wanted}")
    return out


class ToolRegistry:
    """A set of tools by name. Schemas come out sorted by name, so two registries holding
    the same tools advertise byte-identical JSON."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def only(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with just the named tools (unknown names ignored)."""
        wanted = set(names)
        return ToolRegistry(t for n, t in sorted(self._tools.items()) if n in wanted)

    def without(self, names: Iterable[str]) -> ToolRegistry:
        unwanted = set(names)
        return ToolRegistry(t for n, t in sorted(self._tools.items()) if n not in unwanted)

    def schemas(self) -> list[dict[str, Any]]:
        return [self._tools[name].schema() for name in self.names()]

    async def call(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        ctx: ToolContext,
        *,
        call_id: str | None = None,
        budget_chars: int | None = None,
    ) -> ToolOutcome:
        """Run one tool call and return its result for the history.

        `call_id` is the model's tool_call_id: a result cut to `budget_chars` (default the
        context's) is stored whole under it for `retrieve_tool_result`. The size of every
        result is recorded in `ctx.metrics`. Only cancellation propagates."""
        budget = ctx.result_budget_chars if budget_chars is None else budget_chars
        is_error = denied = False
        tool = self._tools.get(name)
        if tool is None:
            raw = f"Error: there is no tool named {name!r}. Available: {', '.join(self.names())}."
            is_error = True
        else:
            try:
                args = check_arguments(tool, parse_arguments(arguments))
                raw = await tool.handler(args, ctx)
            except ToolDenied as exc:
                raw, is_error, denied = f"Denied: {exc}", True, True
            except ToolError as exc:
                raw, is_error = f"Error: {exc}", True
            except Exception as exc:
                log.exception("tool %s failed", name)
                raw = f"Error: {name} failed unexpectedly ({type(exc).__name__}: {exc})"
                is_error = True
        if not isinstance(raw, str):
            raw = str(raw)
        # Before the model, the result store or the history sees it: a key the tool read
        # (`printenv`, a .env file) becomes a marker naming its kind. By its shape only: the
        # prose rules would take half of any source file for passwords, any path for a key.
        redaction = redact(raw, ctx.credentials, prose=False)
        raw = redaction.text
        store = ctx.result_store
        content, truncated = shape_result(
            name,
            raw,
            budget,
            tool_call_id=call_id,
            store=store.store if store else None,
            budget_tokens=ctx.result_budget_tokens if budget_chars is None else None,
            count_tokens=ctx.count_tokens,
        )
        ctx.metrics.record(name, len(raw))
        return ToolOutcome(content, truncated, len(raw), is_error, denied, redaction.found)
