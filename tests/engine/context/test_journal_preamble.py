"""The journal comes back on resume only with what the live checkpoint does not carry, and
asks for checks only of a model that has the tools to run them (issue 41)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.context.checkpoint import render_checkpoint
from engine.context.constants import RETRIEVE_TOOL, STATED_SECTION, STORED_PROGRESS_SECTION
from engine.context.journal_preamble import PREAMBLE_HEAD, journal_preamble

LIVE = render_checkpoint(
    {
        "Goal": ["- Migrate the routes."],
        STATED_SECTION: ["- My budget is 1500 euros."],
        "Done": ["- moved /api/users", "- moved /api/orders"],
        "Next Steps": ["- move /api/billing"],
    }
)


def _record(**sections: list[str]) -> dict[str, str]:
    titles = {"goal": "Goal", "done": "Done", "next": "Next Steps", "stated": STATED_SECTION,
              "decisions": "Key Decisions", "stored": STORED_PROGRESS_SECTION}  # fmt: skip
    body = {titles[k]: [f"- {e}" for e in v] for k, v in sections.items()}
    return {"summary": render_checkpoint(body)}


def test_a_record_the_live_checkpoint_carries_adds_nothing():
    older = _record(goal=["Migrate the routes."], done=["moved /api/users"],
                    next=["move /api/orders"])  # fmt: skip
    assert journal_preamble([older], 2_000, live_checkpoints=[LIVE]) == ""


def test_only_the_left_out_entries_come_back_and_nothing_the_live_one_superseded():
    older = _record(
        goal=["Migrate every route by Friday."],
        stated=["My budget is 1200 euros."],  # corrected since: must not come back
        done=["moved /api/users", "wrote the migration script"],
        next=["move /api/orders"],  # done since
    )
    preamble = journal_preamble([older], 2_000, live_checkpoints=[LIVE])
    assert "wrote the migration script" in preamble
    for stale in ("1200", "by Friday", "move /api/orders", "moved /api/users"):
        assert stale not in preamble


def test_only_a_model_with_tools_is_asked_to_read_files_or_pointed_at_a_stored_one():
    record = _record(done=["wrote the migration script"], stored=["`checkpoint-progress-ab12`"])
    with_tools = journal_preamble([record], 2_000, tools=True)
    without = journal_preamble([record], 2_000, tools=False)
    assert with_tools.startswith(PREAMBLE_HEAD) and without.startswith(PREAMBLE_HEAD)
    assert "read the files" in with_tools and RETRIEVE_TOOL in with_tools
    assert "wrote the migration script" in without
    assert "read the files" not in without and "verify" not in without
    assert RETRIEVE_TOOL not in without


def _step(n: int) -> str:
    return f"did step {n} now"


@given(live=st.sets(st.integers(0, 30), max_size=8), recorded=st.sets(st.integers(0, 30)))
def test_a_preamble_holds_exactly_the_done_entries_the_live_checkpoint_lacks(live, recorded):
    checkpoint = render_checkpoint({"Goal": ["- Go."], "Done": [f"- {_step(n)}" for n in live]})
    preamble = journal_preamble(
        [_record(done=[_step(n) for n in sorted(recorded)])], 100_000, live_checkpoints=[checkpoint]
    )
    shown = {n for n in range(31) if _step(n) in preamble}
    assert shown == recorded - live
    assert bool(preamble) == bool(recorded - live)
