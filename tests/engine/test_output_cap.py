"""The output cap a request carries: a quarter of the window by default, the agent's own
when set, and never more than the window has left after the prompt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.config import default_agent, parse_agent_text, render_agent
from engine.providers.errors import ContextOverflow
from engine.window.output_cap import (
    LIMIT_AGENT,
    LIMIT_DEFAULT,
    LIMIT_ROOM,
    default_output_cap,
    output_cap,
    room_after_refusal,
)


def test_the_default_cap_is_a_quarter_of_the_window_between_512_and_4096():
    assert [default_output_cap(w) for w in (256, 2048, 4096, 8192, 16384, 131072)] == [
        512,
        512,
        1024,
        2048,
        4096,
        4096,
    ]


def test_an_agents_own_cap_wins_and_zero_leaves_only_the_room_of_the_window():
    assert output_cap(300, window=8192, prompt_tokens=100) == (300, LIMIT_AGENT)
    assert output_cap(None, window=8192, prompt_tokens=100).limit == LIMIT_DEFAULT
    zero = output_cap(0, window=8192, prompt_tokens=100)
    assert zero.limit == LIMIT_ROOM and 100 + zero.tokens < 8192


@given(
    configured=st.one_of(st.none(), st.integers(0, 200_000)),
    window=st.integers(256, 1_000_000),
    share=st.floats(0.0, 1.2),
)
def test_a_request_and_its_cap_never_ask_for_more_than_the_window(
    configured: int | None, window: int, share: float
):
    prompt = int(window * share)
    cap = output_cap(configured, window=window, prompt_tokens=prompt)
    assert cap.tokens >= 1
    if prompt < window * 0.95:  # the ladder keeps every request below this
        assert prompt + cap.tokens <= window
    if configured:
        assert cap.tokens <= configured


def test_the_default_agent_file_says_what_a_blank_output_cap_means():
    text = render_agent(default_agent())
    comment = text[: text.index("# max_tokens = ")].rsplit("\n\n", 1)[-1]
    said = " ".join(line.removeprefix("# ") for line in comment.splitlines())
    assert "Unset: a quarter of the context window, at least 512 and at most 4096" in said
    assert parse_agent_text(text).max_tokens is None
    assert parse_agent_text('name = "a"\nmax_tokens = 0\n').max_tokens == 0


def _refusal(**figures: int | None) -> ContextOverflow:
    return ContextOverflow("refused", status=400, **figures)


@pytest.mark.parametrize(
    ("refusal", "refused", "asked", "room"),
    [
        # SGLang named the prompt: the room is the window less it, less one.
        (_refusal(prompt_tokens=3300, window=4096, output_tokens=1024), 1024, None, 795),
        # The prompt alone fills the window, or the refusal weighed no answer room.
        (_refusal(prompt_tokens=4096, window=4096, output_tokens=1024), 1024, None, None),
        (_refusal(prompt_tokens=5000, window=4096), 1024, None, None),
        (_refusal(window=4096, output_tokens=0, prompt_floor=4097), 1024, None, None),
        # vLLM named only where it stopped counting: its count asked afterwards decides.
        (_refusal(window=4096, output_tokens=1024, prompt_floor=3073), 1024, None, None),
        (_refusal(window=4096, output_tokens=1024, prompt_floor=3073), 1024, 3343, 752),
        (_refusal(window=4096, output_tokens=1024, prompt_floor=3073), 1024, 3000, None),
        # Too little left for a useful answer: the ladder makes room instead.
        (_refusal(prompt_tokens=3900, window=4096, output_tokens=1024), 1024, None, None),
        # A room no smaller than what was refused: the refusal was not about the room.
        (_refusal(prompt_tokens=1000, window=4096, output_tokens=512), 512, None, None),
    ],
)
def test_the_room_after_a_refusal_is_only_where_the_prompt_alone_fits(
    refusal: ContextOverflow, refused: int, asked: int | None, room: int | None
):
    assert room_after_refusal(refusal, refused, asked) == room
