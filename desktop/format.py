"""How numbers read in the window: `ctx 6K/128K`, `↑ 43K ↓ 1.1K`, `45.6/s`.

Presentation only; the numbers themselves come from engine events, and a token count reads
as the engine's reports write it (`engine.api.format_tokens`, re-exported here).
"""

from __future__ import annotations

import time

from engine.api import format_tokens

__all__ = ["format_context", "format_duration", "format_rate", "format_receipt", "format_tokens"]


def format_context(used: int | None, window: int | None, source: str, *, estimated: bool) -> str:
    used_text = "–" if used is None else ("~" if estimated else "") + format_tokens(used)
    window_text = "?" if not window else format_tokens(window)
    return f"ctx {used_text}/{window_text} {source}".rstrip()


def format_rate(tokens_per_s: float) -> str:
    return f"{tokens_per_s:.1f}/s"


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{round(seconds)}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s"


def format_receipt(
    elapsed_s: float,
    prompt_tokens: int,
    completion_tokens: int,
    tokens_per_s: float,
    *,
    finished_at: float | None = None,
    cached_tokens: int | None = None,
    cache_reported: bool | None = None,
) -> str:
    """The turn receipt: how long, when, context sent, tokens produced, throughput, and what
    the engine's prompt cache served of it (`cache_reported` None: a receipt kept before
    Brim recorded that, which says nothing of it; False: the engine did not say)."""
    clock = time.strftime("%H:%M", time.localtime(finished_at if finished_at else time.time()))
    text = (
        f"Worked for {format_duration(elapsed_s)} • {clock} • "
        f"↑ {format_tokens(prompt_tokens)} ↓ {format_tokens(completion_tokens)} • "
        f"{format_rate(tokens_per_s)}"
    )
    if cache_reported is None:
        return text
    if not cache_reported or cached_tokens is None:
        return text + " • cache: not reported"
    return text + f" • reused {format_tokens(cached_tokens)} of {format_tokens(prompt_tokens)}"
