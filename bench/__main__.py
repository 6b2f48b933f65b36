"""Run every benchmark module's `main()` and print one table."""

from __future__ import annotations

import importlib
import pkgutil

import bench


def run_all() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        main = getattr(module, "main", None)
        if callable(main):
            rows.extend({"bench": info.name, **row} for row in main())
    return rows


if __name__ == "__main__":
    print(bench.format_table(run_all()))
