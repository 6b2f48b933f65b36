"""How many tokens one answer may take: the `max_tokens` (Ollama: `num_predict`) of a request.

Left to themselves the engines write until the model stops: Ollama's `num_predict` defaults
to -1 and shifts the prompt out of its window to keep going, llama-server writes until its
slot is full, and a small model asked for "a very long essay" ran for 13 minutes and 7.8K
tokens until the user's own earlier messages had to go to make room for it. So every request
carries a cap:

- The agent's `max_tokens` when it sets one (0: no cap of Brim's own).
- Otherwise a quarter of the window, kept within 512..4,096 tokens. A quarter leaves three
  quarters for the conversation, so one answer alone cannot carry a request from below the
  compaction line (80%) past the window; 4,096 tokens is a long answer (some 3,000 words, or
  a 300-line file), more than any reply a person reads at once; below 512 a tiny window
  would cut even a short explanation, and the room left (below) bounds it anyway.
- Never more than the room the window has left after the prompt (minus a small margin for
  counting error): an answer never pushes the prompt out of Ollama's window, never draws
  vLLM's "prompt + max_tokens > max_model_len" rejection, and never needs the history
  trimmed to fit.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.providers.errors import ContextOverflow

DEFAULT_SHARE = 4  # the default cap is window // DEFAULT_SHARE ...
DEFAULT_MIN = 512  # ... kept at least this
DEFAULT_MAX = 4096  # ... and at most this
MARGIN_SHARE = 50  # what the room keeps back for counting error: 2% of the window ...
MARGIN_MIN = 16  # ... and never less than this many tokens

LIMIT_AGENT = "agent"  # the agent's own max_tokens
LIMIT_DEFAULT = "default"  # the default derived from the window
LIMIT_ROOM = "room"  # what the window had left after the prompt


def default_output_cap(window: int) -> int:
    """The cap an agent without `max_tokens` gets on a window of `window` tokens."""
    return max(DEFAULT_MIN, min(DEFAULT_MAX, window // DEFAULT_SHARE))


class OutputCap(NamedTuple):
    """The cap one request carries and what set it (one of the LIMIT_* literals)."""

    tokens: int
    limit: str


def output_cap(configured: int | None, *, window: int, prompt_tokens: int) -> OutputCap:
    """The `max_tokens` for a request of `prompt_tokens` on `window`.

    `configured` is the agent's `max_tokens`: None takes the default, 0 means no cap of the
    agent's own (the room left still applies)."""
    margin = max(MARGIN_MIN, window // MARGIN_SHARE)
    room = max(1, window - prompt_tokens - margin)
    if configured is None:
        wanted, limit = default_output_cap(window), LIMIT_DEFAULT
    elif configured > 0:
        wanted, limit = configured, LIMIT_AGENT
    else:
        wanted, limit = room, LIMIT_ROOM
    if room < wanted:
        return OutputCap(room, LIMIT_ROOM)
    return OutputCap(wanted, limit)


# An engine that ignores the cap (a server that drops `max_tokens`, a fork, a proxy) would
# write for ever; Brim stops it itself once the answer is far past the cap by its own count.
# Far, because on most engines that count is an estimate, which can be off by a factor of
# two against the model's own tokenizer: an engine that keeps to its cap is never cut by
# Brim, and one that does not still stops.
CLIENT_FACTOR = 3  # three times the cap ...
CLIENT_MARGIN = 256  # ... and this many tokens more
LIMIT_IGNORED = "ignored"  # the engine wrote past the cap, and Brim stopped the answer


def client_limit(max_tokens: int) -> int:
    """How many tokens (by Brim's count) an answer capped at `max_tokens` may reach before
    Brim stops it."""
    return CLIENT_FACTOR * max_tokens + CLIENT_MARGIN


# vLLM and SGLang refuse prompt + max_tokens above their window. When the prompt alone fits,
# the same request with a smaller cap is answered: nothing needs compacting. Below this room
# (or half the cap refused, if less) the answer would be cut short, so the ladder makes room
# instead.
MIN_LOWERED_ROOM = 256


def room_after_refusal(exc: ContextOverflow, refused: int, prompt: int | None = None) -> int | None:
    """The max_tokens the engine takes for the prompt it refused with `refused` tokens of
    answer room: its window less the prompt as it counted it (`prompt`: its count asked
    afterwards, where the refusal gave only a floor), less one, as SGLang refuses a total
    equal to its window (vLLM only one above it). None when the prompt itself must shrink:
    the refusal weighed no answer room, the prompt alone fills the window, the engine did
    not say how long the prompt is, or the room left is too small for a useful answer."""
    counted = exc.prompt_tokens if exc.prompt_tokens is not None else prompt
    if exc.window is None or counted is None or not exc.output_tokens:
        return None
    if exc.prompt_floor is not None and counted < exc.prompt_floor:
        return None  # a count the engine's own refusal contradicts
    room = exc.window - counted - 1
    if room >= refused or room < min(MIN_LOWERED_ROOM, refused // 2):
        return None
    return room
