"""Redaction takes out the secret and only the secret, wherever in the text it sits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.redaction import redact

OPENAI = "sk-proj-" + "q8Wn3Lx7Vb2Kc9Tz4Hs6Jd1Fg5"
GITHUB = "ghp_" + "Abc123Def456Ghi789Jkl012Mno345Pqr678"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBH2jD8mXGq1s9y0Z7y0l5aWv4n9QK3wV4k1oS3Hq2XbAAAAJgAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

# Text around a secret: words, punctuation, line breaks, none of them a secret's shape.
_filler = st.lists(
    st.sampled_from(["run", "the", "build", "=", ":", "\n", "path/to/file.py", "42", "--", "ok"]),
    max_size=40,
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(before=_filler, after=_filler, secret=st.sampled_from([OPENAI, GITHUB, PEM]))
def test_a_secret_anywhere_in_tool_output_is_gone_and_the_rest_stays(before, after, secret):
    result = redact(f"{before} {secret} {after}", prose=False)
    assert not [part for part in secret.splitlines() if part in result.text]
    assert result.count == 1
    assert result.text.startswith(before) and result.text.endswith(after)


def test_a_known_key_goes_whatever_it_looks_like_and_a_short_one_is_left():
    result = redact(
        "key abc and brim-engine-key-41c7d2, again brim-engine-key-41c7d2",
        ["abc", "brim-engine-key-41c7d2"],
    )
    assert result.text == (
        "key abc and [redacted: looks like an engine API key], again "
        "[redacted: looks like an engine API key]"
    )
    assert result.found == {"an engine API key": 2}


def test_prose_keeps_the_keyword_and_loses_the_value():
    result = redact("Invalid API key: Zx81-quux-7731 (see docs)")
    assert result.text == "Invalid API key: [redacted: looks like a credential] (see docs)"


def test_a_card_number_in_groups_goes_whole():
    result = redact("card 4111 1111 1111 1111 expires soon")
    assert result.text == "card [redacted: looks like a card number] expires soon"


def test_a_secret_in_one_long_line_is_found_without_taking_the_line():
    line = "x " * 20_000 + f"token={GITHUB} " + "y " * 20_000
    result = redact(line, prose=False)
    assert GITHUB not in result.text
    assert len(result.text) > len(line) - 100
