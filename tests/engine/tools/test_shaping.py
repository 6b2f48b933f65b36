"""Results shaped for a model reader, cut to their budget, and their sizes recorded."""

from __future__ import annotations

from pathlib import Path

from engine.tools import ToolMetrics, ToolResultStore, clean_text, shape_result


def test_terminal_noise_is_removed_and_text_kept_exactly():
    raw = "\x1b[32mPASSED\x1b[0m  \n\tindent\r\nprogress 10%\rprogress 100%\nbell\x07\n"
    assert clean_text(raw) == "PASSED  \n\tindent\nprogress 100%\nbell\n"


def test_osc_hyperlinks_and_titles_are_removed():
    assert clean_text("\x1b]8;;http://x\x07link\x1b]8;;\x07 ok") == "link ok"


def test_a_result_within_its_budget_is_untouched():
    assert shape_result("read_file", "short\n", 100) == ("short\n", False)


def test_a_long_result_is_stored_whole_then_cut_with_a_line_naming_the_call(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    raw = "".join(f"line {i}\n" for i in range(1000))
    content, truncated = shape_result(
        "run_command", raw, 2_000, tool_call_id="call_7", store=store.store
    )
    assert truncated and len(content) <= 2_000
    head, notice = content.rsplit("\n", 1)[0], content.rsplit("\n", 1)[1]
    kept = len(head) + 1
    assert raw.startswith(head + "\n")  # cut at a line boundary
    assert notice == (
        f"[Result cut: showing characters 0-{kept:,} of {len(raw):,}. The whole result is "
        f'stored: call retrieve_tool_result with tool_call_id "call_7" and offset {kept} to '
        "read the rest.]"
    )
    assert store.read("call_7").text == raw
    assert store.read("call_7", offset=kept).text == raw[kept:]


def test_when_the_store_fails_the_cut_says_to_rerun_with_a_narrower_request():
    def broken(_id: str, _text: str) -> bool:
        raise OSError("read-only file system")

    content, truncated = shape_result(
        "search_files", "x" * 5_000, 1_000, tool_call_id="c", store=broken
    )
    assert truncated and len(content) <= 1_000
    assert "retrieve_tool_result" not in content
    assert "re-run search_files with a narrower request" in content


def test_without_a_call_id_nothing_is_stored_and_the_cut_says_so(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    content, truncated = shape_result("read_file", "y" * 3_000, 1_000, store=store.store)
    assert truncated and "re-run read_file" in content
    assert list(tmp_path.iterdir()) == []


def test_stored_text_is_the_cleaned_text_so_offsets_match_what_the_model_saw(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    raw = "\x1b[1m" + "a" * 3_000 + "\x1b[0m"
    shape_result("run_command", raw, 1_000, tool_call_id="c", store=store.store)
    assert store.read("c").text == "a" * 3_000


def test_metrics_sum_sizes_per_tool_and_list_the_largest_first():
    metrics = ToolMetrics()
    metrics.record("read_file", 1_000)
    metrics.record("run_command", 5_000)
    metrics.record("read_file", 4_500)
    metrics.record("list_directory", 300)
    assert metrics.by_tool() == [
        ("read_file", 5_500),
        ("run_command", 5_000),
        ("list_directory", 300),
    ]
    assert metrics.calls("read_file") == 2 and metrics.total() == 10_800


def test_clearing_a_cut_result_later_keeps_the_whole_stored_text(tmp_path: Path):
    store = ToolResultStore(tmp_path)
    raw = "".join(f"row {i}\n" for i in range(2_000))
    content, _ = shape_result("run_command", raw, 1_000, tool_call_id="c1", store=store.store)
    # The clear rung stores what is in the history (the cut text) before stubbing it.
    assert store.store("c1", content)
    assert store.read("c1").text == raw
    # A different result under a fresh id is stored as given.
    assert store.store("c2", content) and store.read("c2").text == content
