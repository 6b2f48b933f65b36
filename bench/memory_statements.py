"""Memory's first pass: how many of 40 lasting first-person statements it suggests (recall),
and how many of 40 sentences that must not become memory it suggests anyway (questions,
other people's wishes, negations, hypotheticals). The sentences are
resources/bench/memory_statements.toml; no model runs, so the figures are exact.

    python -m bench memory_statements
"""

from __future__ import annotations

import tomllib
from typing import Any

from engine.memory.statements import find_statements
from engine.resources import resource_text


def cases() -> dict[str, dict[str, list[str]]]:
    """{"qualify" | "refuse": {group: sentences}}."""
    data = tomllib.loads(resource_text("bench", "memory_statements.toml"))
    return {side: {g: list(s) for g, s in groups.items()} for side, groups in data.items()}


def suggested(sentence: str) -> bool:
    """Whether the first pass makes a suggestion quoting exactly this sentence."""
    return any(found.sentence.text == sentence for found in find_statements(sentence))


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for side, groups in cases().items():
        for group, sentences in groups.items():
            hits = [s for s in sentences if suggested(s)]
            rows.append(
                {
                    "set": side,
                    "group": group,
                    "sentences": len(sentences),
                    "suggested": len(hits),
                    "missed" if side == "qualify" else "wrongly suggested": [
                        s for s in sentences if (s in hits) != (side == "qualify")
                    ],
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    recall = sum(r["suggested"] for r in rows if r["set"] == "qualify")
    false = sum(r["suggested"] for r in rows if r["set"] == "refuse")
    total_q = sum(r["sentences"] for r in rows if r["set"] == "qualify")
    total_r = sum(r["sentences"] for r in rows if r["set"] == "refuse")
    return [
        {
            "measure": f"first pass: lasting statements suggested (of {total_q})",
            "brim": recall,
            "baseline": total_q,
            "baseline is": "every one of them",
        },
        {
            "measure": f"first pass: false suggestions (of {total_r} that must not qualify)",
            "brim": false,
            "baseline": total_r,
            "baseline is": "all of them",
        },
    ]


if __name__ == "__main__":
    rows = main()
    for row in summarize(rows):
        print(f"{row['measure']}: {row['brim']}")
    for row in rows:
        wrong = row.get("missed", row.get("wrongly suggested"))
        print(f"  {row['set']}/{row['group']}: {row['suggested']}/{row['sentences']}", wrong)
