"""The UI streaming benchmark runs both cases through the real window and reports them."""

from bench.ui_streaming import answer_tokens, run_case


def test_the_buffered_case_streams_every_token_and_reports_its_stalls(qtbot):
    tokens = answer_tokens(2_000)
    row = run_case(False, tokens, None)
    assert row["case"] == "buffered, 30 Hz flush"
    assert (row["tokens"], row["finished"]) == (2_000, "yes")
    assert row["longest_stall_ms"] >= row["stall_streaming_ms"] >= 0
    assert row["final_render_ms"] is not None


def test_the_naive_case_stops_at_its_budget_and_says_how_far_it_got(qtbot):
    row = run_case(True, answer_tokens(3_000), 0.05)
    assert row["case"] == "naive per-token append"
    assert row["finished"] in ("yes", "no (stopped at 0.05 s)")
    assert 0 < row["tokens"] <= 3_000
