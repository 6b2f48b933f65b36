"""Run every benchmark module's `main()` (or only the ones named) and print one table: each
figure of Brim's beside the same figure of its baseline, and their ratio.

    python -m bench                 # all of them (the embedded-engine ones take minutes)
    python -m bench counting        # just bench/counting.py
    python -m bench --details       # also each benchmark's own full table

All benchmarks of one run share the machine at the same moment, so compare the ratios, not
the seconds, between runs.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Any

import bench


def run_all(only: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each benchmark's own rows, by module name."""
    results: dict[str, list[dict[str, Any]]] = {}
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only and info.name not in only):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        main = getattr(module, "main", None)
        if callable(main):
            print(f"bench: running {info.name} ...", file=sys.stderr, flush=True)
            results[info.name] = list(main())
    return results


def summary(results: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per figure: Brim's value, the baseline's, and Brim's as a share of it."""
    rows: list[dict[str, Any]] = []
    for name, detail in results.items():
        summarize = getattr(importlib.import_module(f"bench.{name}"), "summarize", None)
        if not callable(summarize):
            continue
        for row in summarize(detail):
            brim, baseline = row["brim"], row["baseline"]
            ratio = brim / baseline if isinstance(brim, int | float) and baseline else None
            rows.append(
                {
                    "bench": name,
                    "measure": row["measure"],
                    "brim": brim,
                    "baseline": baseline,
                    "brim / baseline": f"{ratio:.3g}" if ratio is not None else None,
                    "baseline is": row["baseline is"],
                }
            )
    return rows


def main(argv: list[str]) -> None:
    details = "--details" in argv
    only = [a for a in argv if not a.startswith("-")] or None
    results = run_all(only)
    print(bench.format_table(summary(results)))
    if details:
        for name, rows in results.items():
            print(f"\n{name}\n{bench.format_table(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
