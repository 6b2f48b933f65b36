"""The probe that finds whether a llama-server moves cached chunks to new positions.

llama-server's reuse loop (tools/server/server-context.cpp) first takes the common prefix,
then, with `n_cache_reuse` N > 0 and a memory that can shift, walks the slot's cache from
there: a run of at least N tokens that the new prompt continues with is shifted to its new
place; anything else in the cache is skipped. New text in the prompt ends the matching, so
what it can reuse is what is left after a part is taken out. That is the shape of Brim's
compaction with the checkpoint after the kept messages (the old turns go, the kept ones
move up), and so the probe's shape: a prompt HEAD + DROPPED + KEPT, then HEAD + KEPT + TAIL.
Where the server moved KEPT, its `timings.cache_n` for the second request exceeds the two
prompts' common prefix by about KEPT's length; where it cannot shift (a sliding-window,
hybrid or recurrent model), it serves at most the prefix.

Two short completions (under 200 tokens each, one token generated each) in the slot the
first one used, with the prompts counted by the server's own `/tokenize`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from engine.providers.cache_reuse import CacheReuse
from engine.providers.errors import EngineUnreachable, ProviderError

# The smallest run the probe asks the server to move: far below the kept part (over 100
# tokens), far above what chance makes match.
PROBE_CHUNK = 32

HEAD = "Brim is checking how this server reuses its prompt cache.\n"
DROPPED = "A part that goes: " + " ".join(f"red {n}," for n in range(1, 16)) + "\n"
KEPT = "A part that stays: " + " ".join(f"blue {n}," for n in range(1, 31)) + "\n"
TAIL = "The end.\n"
FIRST = HEAD + DROPPED + KEPT
SECOND = HEAD + KEPT + TAIL

PostJson = Callable[[str, Any], Awaitable[Any]]


def _completion(prompt: str, slot: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt": prompt,
        "n_predict": 1,
        "temperature": 0,
        "cache_prompt": True,
        "n_cache_reuse": PROBE_CHUNK,
        "stream": False,
    }
    if slot is not None:
        body["id_slot"] = slot
    return body


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def _tokens(post: PostJson, text: str) -> list[int] | None:
    answer = await post("/tokenize", {"content": text, "add_special": True})
    listed = answer.get("tokens") if isinstance(answer, dict) else None
    if not isinstance(listed, list):
        return None
    return [t for t in listed if isinstance(t, int) and not isinstance(t, bool)]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def probe_llama_server(post: PostJson) -> CacheReuse:
    """Ask the server behind `post` (its JSON POST) whether it moves cached chunks. An engine
    that cannot be reached raises; any other failure is a finding of "not probed"."""
    try:
        first_tokens = await _tokens(post, FIRST)
        second_tokens = await _tokens(post, SECOND)
        if first_tokens is None or second_tokens is None:
            return CacheReuse(None, reason="the server's /tokenize gave no token list")
        first = await post("/completion", _completion(FIRST, None))
        slot = _int(first.get("id_slot")) if isinstance(first, dict) else None
        second = await post("/completion", _completion(SECOND, slot))
    except EngineUnreachable:
        raise
    except ProviderError as exc:
        return CacheReuse(None, reason=f"the probe request failed: {exc.message}")
    timings = second.get("timings") if isinstance(second, dict) else None
    cached = _int(timings.get("cache_n")) if isinstance(timings, dict) else None
    if cached is None:
        return CacheReuse(None, reason="the server did not report timings.cache_n")
    prefix = _common_prefix(first_tokens, second_tokens)
    return CacheReuse(
        reuses=cached - prefix >= PROBE_CHUNK,
        cached=cached,
        common_prefix=prefix,
        prompt=len(second_tokens),
    )
