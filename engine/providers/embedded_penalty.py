"""The repeat penalty's window, as llama-server keeps it.

llama-server feeds every prompt token into a request's sampler before the first token is
sampled (`common_sampler_accept(slot.smpl, id, false)` over the whole prompt, in
tools/server), so the penalties look back `penalty_last_n` (64) tokens into the prompt from
the very first answer token: the question just asked and the chat template's own markers are
penalised. llama-cpp-python's `Llama.generate` builds a fresh sampler per call and feeds it
only the tokens it samples, so its first answer token is chosen with no penalty at all.

With the bundled SmolLM2 at temperature 0 and Brim's repeat penalty that is not a rounding
difference: the same seven-line chat answered "Neptune, but it's actually Uranus." and
"\"Ava\" in Hebrew" on the embedded engine where llama-server answered Jupiter and the
user's name (docs/benchmarks.md, "The embedded engine and llama-server"). Seeding the
sampler with the prompt, as llama-server does, makes the two engines choose alike.

llama_cpp is imported by the caller (the child); nothing here loads the native library.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp import Llama


@contextlib.contextmanager
def prompt_in_penalty_window(llm: Llama, prompt: Sequence[int]) -> Iterator[None]:
    """While it is open, every sampler `llm.generate` builds has already seen the last
    `llm.last_n_tokens_size` tokens of `prompt` (the whole prompt, cached prefix included),
    as llama-server's sampler has. `Llama.generate` makes its sampler with the instance's
    `_init_sampler`; the wrapper is set on this one instance and removed on leaving."""
    import llama_cpp.llama_cpp as native

    make = llm._init_sampler
    history = [int(t) for t in prompt[-llm.last_n_tokens_size :]] if llm.last_n_tokens_size else []

    def seeded(*args: Any, **kwargs: Any) -> Any:
        sampler = make(*args, **kwargs)
        for token in history:
            native.llama_sampler_accept(sampler.sampler, token)
        return sampler

    llm._init_sampler = seeded  # type: ignore[method-assign]
    try:
        yield
    finally:
        del llm._init_sampler


def generate(llm: Llama, tokens: Sequence[int], **sampler: Any) -> Generator[int, None, None]:
    """`llm.generate(tokens, **sampler)` with the prompt in the penalty window from its first
    sampled token on. Closing it closes the inner generator and restores the instance."""
    with prompt_in_penalty_window(llm, tokens):
        yield from llm.generate(tokens, **sampler)
