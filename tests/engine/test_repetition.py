"""The repetition guard trips on a looping answer however it is streamed, and never on an
answer that does not repeat itself back to back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.repetition import MIN_SPAN, Repetition, RepetitionGuard

VOCABULARY = (
    "the river runs past old mills and towns where people fish trade sing build 1 2 3 "
    "bridge water stone light green deep slow fast north south | - # * ( ) { } ; : ,"
)
WORDS = st.sampled_from(VOCABULARY.split(" "))


def _feed(text: str, sizes: list[int]) -> Repetition | None:
    """Stream `text` in pieces of the given sizes (cycled), as an engine would."""
    guard = RepetitionGuard()
    at, i = 0, 0
    while at < len(text):
        size = sizes[i % len(sizes)] if sizes else 1
        found = guard.feed(text[at : at + size])
        if found is not None:
            return found
        at, i = at + size, i + 1
    return None


@settings(max_examples=60, deadline=None)
@given(
    prefix=st.text(max_size=300),
    block=st.text(min_size=1, max_size=600).filter(lambda b: b.strip() != ""),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
)
def test_a_passage_repeated_back_to_back_trips_the_guard_however_it_is_streamed(
    prefix: str, block: str, sizes: list[int]
):
    copies = max(5, 2 * MIN_SPAN // len(block) + 2)
    text = prefix + block * copies
    found = _feed(text, sizes)
    assert found is not None
    assert len(block) % found.block_chars == 0  # the passage, or a shorter period of it
    assert found.repeats >= 4
    # What is kept is the text before the loop and about one copy, never the loop itself.
    assert found.keep_chars <= len(prefix) + 2 * len(block) + 1
    assert found.answer_chars <= len(text)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(WORDS, min_size=200, max_size=1500), sizes=st.lists(st.integers(1, 12)))
def test_text_that_never_repeats_a_passage_back_to_back_never_trips_it(
    words: list[str], sizes: list[int]
):
    # Numbered lines: however often the same words come back, no stretch of 1,600
    # characters is one passage over and over (as in a real list, table or code).
    lines = [f"{n}. {w} {words[(n * 7) % len(words)]}" for n, w in enumerate(words)]
    assert _feed("\n".join(lines), sizes) is None


def test_a_long_table_with_the_same_separators_on_every_row_does_not_trip_it():
    rows = [f"| {n:>4} | {n * n:>8} | {'even' if n % 2 == 0 else 'odd':<5} |" for n in range(400)]
    assert _feed("| n | n² | parity |\n|---|---|---|\n" + "\n".join(rows), [7]) is None


def test_a_short_run_of_the_same_line_is_not_a_loop_but_a_long_one_is():
    line = "All work and no play makes Jack a dull boy.\n"
    assert _feed("Here it is:\n" + line * 20, [5]) is None  # 880 characters
    found = _feed("Here it is:\n" + line * 60, [5])
    assert found is not None and found.block_chars == len(line)
