"""Tool schemas with compact descriptions, for windows the full ones would crowd out.

The nine schemas Brim advertises cost about 1,700-2,300 tokens: over 40% of a 4,096-token
window before the first message. Compact schemas keep every name, parameter, type, enum and
`required` list (so the model calls the tools exactly as before and every call still checks
against the same parameters) and shorten only the prose: a tool's description to its first
sentence, a parameter's to its first clause.
"""

from __future__ import annotations

import copy
import re
from typing import Any

TOOL_DESCRIPTION_CHARS = 90
PARAMETER_DESCRIPTION_CHARS = 48
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|:\s|;\s|\s\(")
_CLAUSE_END = re.compile(r"[.;:(]\s|, e\.g\.|\s\(")


def _clip(text: str, limit: int, end: re.Pattern[str]) -> str:
    text = " ".join(text.split())
    match = end.search(text)
    if match is not None and match.start() > 0:
        text = text[: match.start()].rstrip(" .,;:")
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(" .,;:")
    return text


def _compact_parameters(schema: Any) -> Any:
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                short = _clip(value, PARAMETER_DESCRIPTION_CHARS, _CLAUSE_END)
                if short:
                    out[key] = short
            elif key in ("examples", "example"):
                continue
            else:
                out[key] = _compact_parameters(value)
        return out
    if isinstance(schema, list):
        return [_compact_parameters(item) for item in schema]
    return schema


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI function schema with compact descriptions (a new copy)."""
    out = copy.deepcopy(schema)
    function = inner if isinstance(inner := out.get("function"), dict) else out
    description = function.get("description")
    if isinstance(description, str):
        function["description"] = _clip(description, TOOL_DESCRIPTION_CHARS, _SENTENCE_END)
    if isinstance(parameters := function.get("parameters"), dict):
        properties = parameters.get("properties")
        if isinstance(properties, dict):
            parameters["properties"] = {
                name: _compact_parameters(spec) for name, spec in properties.items()
            }
    return out


def compact_schemas(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [compact_schema(schema) for schema in schemas]
