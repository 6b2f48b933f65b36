"""Memory's first pass in eight languages besides English: per language, how many of its
lasting first-person statements it suggests (recall), and how many sentences that must not
become memory it suggests anyway (questions, other people, negations, hypotheticals, plain
requests). The sentences are resources/bench/memory_statements_languages.toml; no model
runs, so the figures are exact.

    python -m bench memory_languages
"""

from __future__ import annotations

import tomllib
from typing import Any

from engine.memory.statements import find_statements
from engine.resources import resource_text


def cases() -> dict[str, dict[str, list[str]]]:
    """{language: {"qualify" | "refuse": sentences}}."""
    data = tomllib.loads(resource_text("bench", "memory_statements_languages.toml"))
    return {lang: {side: list(s) for side, s in sides.items()} for lang, sides in data.items()}


def suggested(sentence: str) -> bool:
    """Whether the first pass makes a suggestion quoting exactly this sentence."""
    return any(found.sentence.text == sentence for found in find_statements(sentence))


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for language, sides in cases().items():
        hits = {side: [s for s in sentences if suggested(s)] for side, sentences in sides.items()}
        rows.append(
            {
                "language": language,
                "recall": len(hits["qualify"]),
                "of": len(sides["qualify"]),
                "false suggestions": len(hits["refuse"]),
                "of refuse": len(sides["refuse"]),
                "missed": [s for s in sides["qualify"] if s not in hits["qualify"]],
                "wrongly suggested": hits["refuse"],
            }
        )
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append(
            {
                "measure": f"{r['language']}: lasting statements suggested (of {r['of']})",
                "brim": r["recall"],
                "baseline": r["of"],
                "baseline is": "every one of them",
            }
        )
        out.append(
            {
                "measure": f"{r['language']}: sentences wrongly suggested (of {r['of refuse']})",
                "brim": r["false suggestions"],
                "baseline": 0,
                "baseline is": "none of them",
            }
        )
    return out
