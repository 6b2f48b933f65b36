"""How token counts read in the header and receipts."""

import pytest

from desktop.format import format_context, format_tokens


@pytest.mark.parametrize(
    ("tokens", "shown"),
    [
        (0, "0"),
        (999, "999"),
        (1100, "1.1K"),
        (6000, "6K"),
        (43_000, "43K"),
        (8192, "8K"),
        (32768, "32K"),
        (131_072, "128K"),
        (128_000, "128K"),
        (2_000_000, "2M"),
    ],
)
def test_token_counts_read_the_way_engines_advertise_them(tokens, shown):
    assert format_tokens(tokens) == shown


def test_an_estimated_context_is_marked_with_a_tilde():
    assert format_context(6000, 131_072, "fallback", estimated=True) == "ctx ~6K/128K fallback"


def test_a_window_known_before_any_request_shows_a_dash_for_usage():
    assert format_context(None, 8192, "model-max", estimated=False) == "ctx –/8K model-max"
