"""Whether the engine silently cut the prompt: Ollama answers 200 after dropping the start
of a prompt longer than its window."""

from __future__ import annotations


def detect_silent_truncation(
    counted: int,
    reported_prompt_tokens: int | None,
    *,
    window: int | None = None,
    tolerance: float = 0.15,
    min_gap: int = 64,
) -> bool:
    """True when the engine evaluated far fewer prompt tokens than Brim sent: Ollama then cut
    the prompt to fit its window and answered 200 anyway.

    Why these thresholds: a calibrated estimate and the engine's count differ by a few
    percent (template framing, the heuristic's drift), so only a shortfall beyond 15% counts;
    on short prompts framing alone can be 30%, so the shortfall must also exceed 64 tokens.
    Truncation cuts the prompt to fit the window, so a report above the window Brim accounts
    against is not a truncation to it (the window is wrong instead, and that shows elsewhere).
    Only engines that truncate silently (Ollama) should be checked; a report of None (not
    reported) is never a truncation.
    """
    if reported_prompt_tokens is None or reported_prompt_tokens < 0 or counted <= 0:
        return False
    shortfall = counted - reported_prompt_tokens
    if shortfall <= min_gap or reported_prompt_tokens >= (1.0 - tolerance) * counted:
        return False
    return window is None or reported_prompt_tokens <= window
