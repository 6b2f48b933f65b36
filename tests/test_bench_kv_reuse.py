"""The KV-reuse benchmark's arithmetic, on requests whose figures are known (the benchmark
itself needs the embedded model and minutes: `python -m bench kv_reuse`)."""

from __future__ import annotations

from bench.kv_reuse import CASES, Request, Tally, figures, scripted_turns, summarize


def test_the_figures_set_reuse_against_the_shared_prefix_and_count_compaction_and_memory():
    case = next(c for c in CASES if c.window == 4096)
    ladder = Tally(
        [
            Request("agent", prompt=1000, cached=0, shared=0),
            Request("agent", prompt=1300, cached=1000, shared=1000),
            Request("compaction", prompt=1500, cached=1290, shared=1290),
            Request("agent", prompt=900, cached=400, shared=500),  # after the rebuild: 80%
            Request("memory", prompt=700, cached=0, shared=0),
        ]
    )
    sliding = Tally([Request("sliding", 3000, 0, 0), Request("sliding", 3000, 100, 2000)])
    rows = {row["measure"].split(": ", 1)[1]: row for row in figures(case, ladder, sliding)}
    worst = rows["reusable prefix reused, worst agent request"]
    assert worst["brim"] == 0.8
    evaluated = rows["prompt tokens evaluated anew, compaction and memory included"]
    assert evaluated["brim"] == 1000 + 300 + 210 + 500 + 700
    assert rows["of which memory requests (1 requests)"]["brim"] == 700
    assert evaluated["baseline"] == 3000 + 2900
    assert summarize([*figures(case, ladder, sliding), {"detail": True}]) == list(
        figures(case, ladder, sliding)
    )


def test_the_log_turns_grow_with_their_lines_and_the_short_ones_stay_as_they_were():
    short = scripted_turns(3)
    medium, long = scripted_turns(3, log_lines=5), scripted_turns(3, log_lines=9)
    assert short[0].startswith("Step 0: the service on port 8000")
    assert all(len(t.split()) < 40 for t in short)
    assert all(90 <= len(t.split()) <= 140 for t in medium)
    assert all(len(m.split()) < len(w.split()) for m, w in zip(medium, long, strict=True))
    assert [c.log_lines for c in CASES if c.window == 4096] == [5, 9]
