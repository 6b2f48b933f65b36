"""Small windows: compact tool schemas (the same tools, fewer tokens) and tool results cut to
a token budget, so a result dense in digits is not let through at a prose ratio."""

from __future__ import annotations

import json

from engine.tokens import load_encoding
from engine.tools import default_registry
from engine.tools.compact_schemas import compact_schemas
from engine.tools.shaping import shape_result


def _tokens(value: object) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(json.dumps(value)))


def _shape(schema: dict) -> tuple:
    function = schema["function"]
    parameters = function["parameters"]
    properties = {
        name: {k: v for k, v in spec.items() if k != "description"}
        for name, spec in parameters.get("properties", {}).items()
    }
    return function["name"], properties, parameters.get("required")


def test_compact_schemas_keep_every_name_parameter_and_type_at_about_half_the_tokens():
    full = default_registry().schemas()
    compact = compact_schemas(full)
    assert [_shape(s) for s in compact] == [_shape(s) for s in full]
    assert _tokens(compact) <= 0.6 * _tokens(full)
    assert all(s["function"]["description"] for s in compact)


def test_a_result_of_numbers_is_cut_to_the_token_budget_not_the_character_guess():
    count = lambda text: len(load_encoding("o200k_base").encode_ordinary(text))  # noqa: E731
    numbers = "\n".join(f"{i},{i * 3.14159:.5f},{i * 2.71828:.5f}" for i in range(400))
    prose = "The committee reviewed the proposal and agreed that it was sound.\n" * 200
    budget_tokens = 500
    shaped_numbers, cut_numbers = shape_result(
        "read_file", numbers, budget_tokens * 3, budget_tokens=budget_tokens, count_tokens=count
    )
    shaped_prose, cut_prose = shape_result(
        "read_file", prose, budget_tokens * 3, budget_tokens=budget_tokens, count_tokens=count
    )
    assert cut_numbers and cut_prose
    assert count(shaped_numbers) <= budget_tokens + 80  # the head, plus the cut notice
    assert count(shaped_prose) <= budget_tokens + 80
    assert len(shaped_numbers) < len(shaped_prose)  # denser text, fewer characters kept
