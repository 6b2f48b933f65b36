"""Token counts as people read them, the same in the window, the rail and headless."""

from __future__ import annotations


def format_tokens(n: int) -> str:
    """`950`, `1.2K`, `43K`, `1.2M`: one decimal below 10K and for millions. A window that is
    a whole multiple of 4096 reads the way engines advertise it (8192 → 8K, 131072 → 128K),
    as the header shows it."""
    n = max(0, int(n))
    if n < 1_000:
        return str(n)
    base = 1024 if n % 4096 == 0 else 1000
    if n < 10 * base:
        return f"{n / base:.1f}".rstrip("0").rstrip(".") + "K"
    if n < base * base:
        return f"{round(n / base)}K"
    return f"{n / (base * base):.1f}".rstrip("0").rstrip(".") + "M"
