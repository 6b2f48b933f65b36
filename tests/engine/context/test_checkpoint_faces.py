"""The two faces of a checkpoint (issue 17): the stored form keeps its sections, and never an
empty one; what the model is shown is plain second-person context, under any cap."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.checkpoint import cap_checkpoint, parse_checkpoint, render_checkpoint
from engine.context.constants import CHECKPOINT_SCHEMA, STATED_SECTION
from engine.context.model_face import OPENING, render_for_model

TITLES = [title for _, title in CHECKPOINT_SCHEMA]
PLACEHOLDERS = ("(none)", "- none", "n/a")


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _headings_with_entries(checkpoint: str) -> dict[str, int]:
    """Each heading of a rendered checkpoint and how many entries stand under it."""
    counts: dict[str, int] = {}
    current = None
    for line in checkpoint.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            counts[current] = 0
        elif line.strip() and current is not None:
            counts[current] += 1
    return counts


def test_the_model_is_shown_plain_statements_addressed_to_it():
    stored = render_checkpoint(
        {
            "Goal": ["- The user is asking about a trip to Lisbon."],
            STATED_SECTION: ["- My budget for the whole trip is 1200 euros."],
            "Covered So Far": ["- `notes/lisbon.md`"],
            "Done": ["- **Done** booked the flights"],
            "Next Steps": ["- (none)"],
            "Critical Context": ["- [the answer is: 36]"],
        }
    )
    shown = render_for_model(stored)
    assert shown.startswith(OPENING)
    assert "The user told you:\n\u201cMy budget for the whole trip is 1200 euros.\u201d" in shown
    assert "The user asked about a trip to Lisbon." in shown
    assert "`notes/lisbon.md`" in shown and "Already done: Done booked the flights." in shown
    for artefact in ("#", "(none)", "The user is asking", "**", "[", "Next:"):
        assert artefact not in shown, artefact
    assert render_for_model("") == ""


def test_the_stored_checkpoint_leaves_an_empty_section_out_and_keeps_its_headings():
    stored = render_checkpoint({"Goal": ["- Plan the trip."], "Key Decisions": ["- (none)"]})
    assert stored == "## Goal\n- Plan the trip.\n"
    assert parse_checkpoint(stored)[1] == {"Goal": ["- Plan the trip."]}


entry = st.text("abcdefghij klmnop", min_size=1, max_size=40).map(str.strip)
section_lines = st.lists(
    st.one_of(entry.map(lambda e: f"- {e}"), st.sampled_from(["- (none)", "", "- none"])),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(TITLES), section_lines, max_size=len(TITLES)),
    st.integers(0, 300),
)
def test_under_any_cap_no_empty_section_or_placeholder_reaches_the_checkpoint_or_the_model(
    sections, cap
):
    stored = render_checkpoint(sections)
    capped = cap_checkpoint(stored, cap, lambda t: _tokens(render_for_model(t)), _tokens)
    for heading, entries in _headings_with_entries(capped).items():
        assert entries > 0 or heading == "Progress", (heading, capped)
    assert "left out" not in capped
    assert not any(p in capped.lower() for p in PLACEHOLDERS)
    shown = render_for_model(capped)
    assert not re.search(r"^\s*#", shown, re.MULTILINE)
    assert "(none)" not in shown and "left out" not in shown
    # Headings cost nothing to drop first: a checkpoint that fits is kept whole.
    if _tokens(render_for_model(stored)) <= cap:
        assert capped == stored
