"""Memory: what reading a large file through the agent's `read_file` costs, beside the naive
read that loads the whole file and cuts a page from it.

Agents open logs of hundreds of megabytes; a tool that loads the file to show one page
holds the whole file (and its decoded copy) in memory for each call. Python's allocations
are traced (tracemalloc), so the figures are the peak bytes each way allocated, not the
process's resident size.

    python -m bench.memory
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.tools.read_tool import DEFAULT_LINES, read_page

FILE_MIB = 128
LINE = b"2025-03-14 02:10:11 import batch=%07d rows=5000 retries=3 status=ok\n"


def _write_log(path: Path) -> None:
    with open(path, "wb") as handle:
        written, n = 0, 0
        while written < FILE_MIB << 20:
            chunk = b"".join(LINE % (n + i) for i in range(10_000))
            handle.write(chunk)
            written += len(chunk)
            n += 10_000


def _naive_page(workspace: Path, name: str, offset: int) -> str:
    lines = (workspace / name).read_text(encoding="utf-8").splitlines()
    page = lines[offset - 1 : offset - 1 + DEFAULT_LINES]
    return "\n".join(f"{offset + i:6d}\t{line}" for i, line in enumerate(page))


def _peak(fn: Callable[[], str]) -> tuple[float, float]:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / (1 << 20), time.perf_counter() - started


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="brim-bench-memory-") as tmp:
        workspace = Path(tmp)
        _write_log(workspace / "import.log")
        for where, offset in (("first page", 1), ("a page in the middle", 800_000)):
            for case, fn in (
                ("read_file (paged)", lambda o=offset: read_page(workspace, "import.log", o)),
                (
                    "naive: read all, cut a page",
                    lambda o=offset: _naive_page(workspace, "import.log", o),
                ),
            ):
                peak_mib, seconds = _peak(fn)
                rows.append(
                    {
                        "case": case,
                        "page": where,
                        "file_mib": FILE_MIB,
                        "peak_mib": round(peak_mib, 2),
                        "seconds": round(seconds, 3),
                    }
                )
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Peak memory of one page, Brim's paged read beside the whole-file read."""
    out = []
    for page in dict.fromkeys(r["page"] for r in rows):
        brim, naive = (r for r in rows if r["page"] == page)
        out.append(
            {
                "measure": f"read_file, {page} of a {brim['file_mib']} MiB log: peak memory (MiB)",
                "brim": brim["peak_mib"],
                "baseline": naive["peak_mib"],
                "baseline is": "read the whole file, cut a page",
            }
        )
    return out


if __name__ == "__main__":
    from bench import format_table

    print(format_table(main()))
