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


def test_the_server_figures_set_each_run_against_the_sliding_window_without_chunk_reuse():
    from bench.kv_reuse import after_compaction, server_figures

    case = next(c for c in CASES if c.window == 4096)
    brim = Tally(
        [
            Request("agent", prompt=1000, cached=0, shared=0),
            Request("memory", prompt=900, cached=0, shared=0),
            Request("compaction", prompt=1100, cached=1000, shared=1000),
            Request("compaction", prompt=1120, cached=1100, shared=1100),
            Request("agent", prompt=600, cached=30, shared=30),  # checkpoint and tail anew
            Request("agent", prompt=800, cached=600, shared=600),
        ]
    )
    assert [r.prompt for r in after_compaction(brim)] == [600]
    plain_brim = Tally([Request("agent", 5000, 0, 0)])
    sliding = Tally([Request("sliding", 4000, 0, 0), Request("sliding", 4000, 1000, 1000)])
    shifted = Tally([Request("sliding", 4000, 0, 0), Request("sliding", 4000, 3900, 100)])
    runs = {
        ("brim", True): brim,
        ("brim", False): plain_brim,
        ("sliding", False): sliding,
        ("sliding", True): shifted,
    }
    rows = {row["measure"].split(": ", 1)[1]: row for row in server_figures(case, runs)}
    total = rows["Brim with n_cache_reuse: prompt tokens evaluated anew, all requests"]
    assert total["brim"] == 1000 + 900 + 100 + 20 + 570 + 200
    assert total["baseline"] == 4000 + 3000
    first = rows["Brim with n_cache_reuse: of which the first request after each of 1 compactions"]
    assert first["brim"] == 570
    assert rows["Brim with n_cache_reuse: of which compaction and memory requests"]["brim"] == 1020
    assert rows["Brim n_cache_reuse 0: prompt tokens evaluated anew, all requests"]["brim"] == 5000
    beside_shifted = rows["Brim with n_cache_reuse: prompt tokens evaluated anew"]
    assert beside_shifted["baseline"] == 4000 + 100


def test_a_memory_request_replayed_on_the_cached_conversation_is_counted_as_memory():
    from bench.kv_reuse import MEMORY_PROMPT_HEAD, RequestRecorder
    from engine.context.replay import Replay, replay_messages
    from engine.memory.replayed_scan import replay_instruction
    from engine.messages import assistant, system, user

    sent = (system("You are Brim."), user("Step 0: the service restarted."), assistant("Noted."))
    replay = Replay(sent, (), 30)
    recorder = RequestRecorder(Tally([]), sliding=False, label="test")
    assert recorder.kind(list(sent)) == "agent"
    replayed = replay_messages(replay, replay_instruction("memory-extractor"))
    assert recorder.kind(replayed) == "memory"
    # The instruction joined to a last-sent user message is told the same way.
    joined = replay_messages(Replay(sent[:2], (), 20), replay_instruction("memory-extractor"))
    assert len(joined) == 2 and recorder.kind(joined) == "memory"
    transcript = [system(MEMORY_PROMPT_HEAD + "extractor (memory-extractor)."), user("…")]
    assert recorder.kind(transcript) == "memory"


def test_the_vllm_case_without_its_environment_says_why_and_starts_no_server(monkeypatch, capsys):
    import bench._kv_reuse_vllm as on_vllm
    import bench.kv_reuse_quick as quick

    def no_server(client: str, turns: list[str]) -> None:
        raise AssertionError("a vLLM was started without .venv-vllm")

    monkeypatch.setenv("KV_QUICK_VLLM", "only")
    monkeypatch.setattr(on_vllm, "unavailable", lambda: "no real vLLM: not built here")
    monkeypatch.setattr(on_vllm, "on_vllm", no_server)
    assert quick.main() == []
    assert "the vLLM case is skipped: no real vLLM: not built here" in capsys.readouterr().out


def test_the_vllm_rows_charge_each_client_its_prompt_tokens_less_the_cached_blocks(
    monkeypatch,
):
    import bench._kv_reuse_vllm as on_vllm
    import bench.kv_reuse_quick as quick

    brim = Tally([Request("agent", 300, 0, 0), Request("agent", 500, 256, 290)])
    sliding = Tally([Request("sliding", 300, 0, 0), Request("sliding", 520, 0, 20)])
    runs = {"brim": quick.Run(brim, True), "sliding": quick.Run(sliding, False)}
    monkeypatch.setattr(on_vllm, "vllm_runs", lambda turns: runs)
    rows, _ = quick.vllm_rows(["a turn"], floor=400)
    by_client = {row["measure"].split(":")[1].strip(): row for row in rows}
    assert by_client["brim"]["brim"] == 300 + 244
    assert by_client["sliding"]["brim"] == 820
    assert all(row["baseline"] == 820 for row in rows)
    assert "fact in the last request: yes" in by_client["brim"]["measure"]
    assert "fact in the last request: no" in by_client["sliding"]["measure"]
    assert by_client["limit (the new tokens of each turn)"]["brim"] == 400
