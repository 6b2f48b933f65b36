"""llama-server's prompt cache as its source reads (tools/server/server-context.cpp): what a
slot reuses of a new prompt, given the tokens it holds.

First the common prefix. Then, with `n_cache_reuse` N > 0, the loop walks both from there:
where at least N tokens of the prompt match the cache at its current place, that chunk is
shifted to the prompt's place and both move past it; otherwise only the cache moves on by
one. So a kept part is reused at a new place only while the prompt, from its first
difference on, is made of chunks that the cache holds in the same order: new text in the
prompt ends the matching there.
"""

from __future__ import annotations

from collections.abc import Sequence


def reused_tokens(cache: Sequence[int], prompt: Sequence[int], n_cache_reuse: int) -> int:
    """How many of `prompt`'s tokens the slot takes from its cache instead of evaluating."""
    n_past = 0
    while n_past < min(len(cache), len(prompt)) and cache[n_past] == prompt[n_past]:
        n_past += 1
    if n_cache_reuse <= 0:
        return n_past
    head_c = head_p = n_past
    while head_c < len(cache) and head_p < len(prompt):
        n_match = 0
        while (
            head_c + n_match < len(cache)
            and head_p + n_match < len(prompt)
            and cache[head_c + n_match] == prompt[head_p + n_match]
        ):
            n_match += 1
        if n_match >= n_cache_reuse:
            n_past += n_match
            head_c += n_match
            head_p += n_match
        else:
            head_c += 1
    return n_past
