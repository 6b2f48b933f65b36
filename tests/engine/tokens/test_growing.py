"""The answer's tokens are counted as it grows, each piece once.

Before, the gauge re-encoded the whole answer at every report, so the time grew with the
square of the answer; the pieces are cut where tokenizers cut anyway, so the sum is the
whole text's count."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from engine.tokens import TokenCounter
from engine.tokens.growing import PIECE_CHARS, GrowingCount

words = st.text(alphabet="abcdefgh", min_size=1, max_size=30)
spaces = st.sampled_from([" ", "\n", "  ", "\n\n", " \n"])


def _words(text: str) -> int:
    return len(text.split())


@given(
    parts=st.lists(st.tuples(words, spaces), min_size=1, max_size=3000),
    cuts=st.lists(st.integers(1, 5000), max_size=40),
)
def test_the_growing_count_of_a_text_in_any_chunks_is_the_count_of_the_whole(parts, cuts):
    text = "".join(w + s for w, s in parts)
    counter = GrowingCount(_words)
    start = 0
    for cut in sorted(cuts):
        counter.add(text[start:cut])
        start = max(start, cut)
    counter.add(text[start:])
    assert counter.tokens == _words(text)


def test_a_megabyte_answer_in_small_deltas_costs_about_one_count_of_it():
    counter = TokenCounter("gpt-4o")  # tiktoken: the encoder whose re-counts were quadratic
    deltas = [f"word{i} " for i in range(150_000)]  # about 1.3 MB
    growing = GrowingCount(counter.count_text)
    started = time.monotonic()
    for i, delta in enumerate(deltas):
        growing.add(delta)
        if i % 2000 == 0:  # a gauge report every ~15 KB, as the loop sends them
            _ = growing.tokens
    incremental = time.monotonic() - started
    started = time.monotonic()
    whole = counter.count_text("".join(deltas))
    once = time.monotonic() - started
    assert abs(growing.tokens - whole) <= len("".join(deltas)) // PIECE_CHARS + 1
    assert incremental < 10 * once + 1.0, (incremental, once)


def test_the_limit_is_past_once_the_settled_text_has_more_tokens():
    growing = GrowingCount(_words, limit=1000)
    for i in range(3000):
        growing.add(f"w{i} ")
        if growing.over:
            break
    assert growing.over and 1000 < growing.tokens < 1000 + PIECE_CHARS
