"""The counting benchmark runs, on the history the issue names, and prints both figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import format_table
from bench.counting import build_history, main
from engine.tokens import TokenCounter

ROOT = Path(__file__).resolve().parent.parent


def test_the_benchmark_history_is_300_messages_of_about_100k_tokens_with_tool_results():
    history = build_history()
    assert len(history) == 300
    assert any(m.role == "tool" for m in history)
    assert 80_000 <= TokenCounter("llama3.1:8b").count_request(history, []) <= 120_000


def test_incremental_preparation_beats_a_full_recount():
    rows = {row["case"]: row for row in main()}
    tiktoken_row = next(r for case, r in rows.items() if case.startswith("tiktoken"))
    assert tiktoken_row["incremental_ms"] * 3 < tiktoken_row["full_recount_ms"]
    assert all(r["speedup_x"] is not None for r in rows.values())


def test_python_m_bench_prints_one_table_with_each_baseline_beside_its_figure():
    result = subprocess.run(
        [sys.executable, "-m", "bench", "counting"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "bench",
        "measure",
        "brim",
        "baseline",
        "brim",
        "/",
        "baseline",
        "baseline",
        "is",
    ]
    figures = [line for line in lines[2:] if line.startswith("counting")]
    assert len(figures) == 2  # the two counters, each beside its full recount
    assert all(line.rstrip().endswith("recount every message") for line in figures)
    assert "incremental_ms" not in result.stdout  # the details only with --details


def test_the_table_aligns_columns_and_marks_missing_cells():
    table = format_table([{"a": 1, "b": "x"}, {"a": 22, "c": 0.5}]).splitlines()
    assert table[0].split() == ["a", "b", "c"]
    assert table[3].split() == ["22", "-", "0.500"]
