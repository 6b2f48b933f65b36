"""Run every benchmark module's `main()` (or only the ones named) and print one table.

    python -m bench                 # all of them (the embedded-engine ones take minutes)
    python -m bench counting        # just bench/counting.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def run_all(only: list[str] | None = None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only and info.name not in only):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        main = getattr(module, "main", None)
        if callable(main):
            rows.extend({"bench": info.name, **row} for row in main())
    return rows


if __name__ == "__main__":
    print(bench.format_table(run_all(sys.argv[1:] or None)))
