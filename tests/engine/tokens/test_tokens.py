"""The token counter: exact, tiktoken and calibrated-heuristic strategies (window.md)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.messages import Message, ToolCall, assistant, notice, system, tool_result, user
from engine.providers.base import (
    EngineReport,
    ModelInfo,
    Provider,
    StreamDone,
    StreamItem,
    Usage,
)
from engine.tokens import (
    DEFAULT_RATIO,
    MESSAGE_OVERHEAD,
    SEED_REQUEST_OVERHEAD,
    TOOL_RESULT_OVERHEAD,
    TokenCounter,
    counter_for,
    family_ratio,
    openai_encoding_name,
)

ROOT = Path(__file__).resolve().parents[3]

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the workspace for a phrase",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


class WordTemplate:
    """A tiny engine: its tokens are whitespace-separated words and its chat template wraps each
    message in role tags. It renders a whole request the way a real template does, so a whole
    count can be compared with the counter's sum of segments; it records every call."""

    def __init__(self) -> None:
        self.message_calls: dict[str, int] = {}
        self.text_calls = 0

    def render_message(self, m: Message) -> str:
        calls = " ".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
        return f"<{m.role}> {m.content} {calls} {m.name or ''} </{m.role}>"

    def render_request(self, messages: list[Message], tools: list[dict[str, Any]]) -> str:
        parts = [self.render_message(m) for m in messages if not m.is_notice]
        if tools:
            schemas = " ".join(json.dumps(t, ensure_ascii=False, sort_keys=True) for t in tools)
            parts.append(f"<tools> {schemas} </tools>")
        parts.append("<assistant>")
        return " ".join(parts)

    def count_whole(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return len(self.render_request(messages, tools).split())

    # SegmentTokenizer
    def count_message(self, message: Message) -> int:
        self.message_calls[message.content] = self.message_calls.get(message.content, 0) + 1
        return len(self.render_message(message).split())

    def count_text(self, text: str) -> int:
        self.text_calls += 1
        return len(text.split())

    def request_overhead(self, has_tools: bool) -> int:
        return 1 + (2 if has_tools else 0)


def conversation(turns: int, words: int = 40) -> list[Message]:
    call = ToolCall(id="c0", name="search", arguments='{"q": "needle"}')
    out: list[Message] = [system("You are terse.")]
    for i in range(turns):
        out.append(user(f"question {i} " + "lorem ipsum dolor " * words))
        out.append(assistant("", tool_calls=(call,)))
        out.append(tool_result(call, f"result {i} " + "alpha beta " * words))
        out.append(assistant(f"answer {i} " + "sit amet " * words))
    return out


# --- caching and incremental work -------------------------------------------------------------


def test_each_message_is_tokenized_once_however_often_it_is_counted():
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    history = conversation(5)
    for _ in range(3):
        counter.count_request(history, [SEARCH])
        counter.count_message(history[1])
    assert set(engine.message_calls.values()) == {1}
    assert len(engine.message_calls) == len({m.content for m in history})


def test_a_message_rebuilt_with_the_same_content_is_not_tokenized_again():
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    counter.count_message(user("the same words"))
    counter.count_message(user("the same words"))  # a new object, a new id, the same content
    assert engine.message_calls == {"the same words": 1}


def test_preparing_the_next_request_measures_only_the_new_message():
    counter = TokenCounter("llama3.1:8b")
    history = conversation(75)
    counter.count_request(history, [SEARCH])
    before = counter.measured
    history.append(user("and one more thing"))
    counter.count_request(history, [SEARCH])
    assert counter.measured == before + 1


def test_tool_schemas_are_measured_once():
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    for _ in range(4):
        counter.count_request([user("hi")], [SEARCH])
    assert engine.text_calls == 1


def test_notices_cost_nothing_because_the_model_never_sees_them():
    counter = TokenCounter("llama3.1:8b")
    plain = [user("hello there")]
    assert counter.count_message(notice("compacted 40 messages", "info")) == 0
    noisy = [*plain, notice("compacted 40 messages", "info")]
    assert counter.count_request(noisy, []) == counter.count_request(plain, [])


# --- the exact strategy -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "tools"), [(0, []), (1, []), (3, [SEARCH]), (12, [SEARCH, {"name": "x"}])]
)
def test_exact_segment_counts_sum_to_the_whole_request_count(turns, tools):
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    history = [*conversation(turns), user("now what?")]
    assert counter.estimate_is_exact
    assert counter.count_request(history, tools) == engine.count_whole(history, tools)


def test_an_exact_count_is_not_moved_by_a_matching_report():
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    history = conversation(3)
    whole = engine.count_whole(history, [])
    counter.calibrate(history, [], whole)
    assert counter.count_request(history, []) == whole


def test_exact_calibration_learns_a_residual_overhead_smoothed_at_0_7():
    engine = WordTemplate()
    counter = TokenCounter("any", tokenizer=engine)
    history = conversation(2)
    reported = engine.count_whole(history, []) + 10  # e.g. a default system prompt
    counter.calibrate(history, [], reported)
    assert counter.request_overhead(False) == 1 + round(0.3 * 10)
    for _ in range(30):
        counter.calibrate(history, [], reported)
    assert counter.count_request(history, []) == reported
    assert counter.request_overhead(True) == 3  # requests with tools learn separately


# --- the heuristic strategy -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "ratio"),
    [
        ("claude-3-5-sonnet", 3.5),
        ("gemini-2.5-pro", 4.0),
        ("llama3.1:8b", 3.6),
        ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 3.6),
        ("qwen2.5:7b", 3.7),
        ("mistral-nemo", 3.5),
        ("gemma3:27b", 3.9),
        ("phi4", 3.5),
        ("smollm2:135m", 3.4),
        ("something-new", DEFAULT_RATIO),
    ],
)
def test_the_ratio_is_seeded_by_family(model, ratio):
    assert family_ratio(model) == ratio
    counter = TokenCounter(model)
    assert (counter.strategy, counter.ratio) == ("heuristic", ratio)
    assert not counter.estimate_is_exact


def test_a_message_costs_its_characters_over_the_ratio_plus_four():
    counter = TokenCounter("llama3.1:8b")  # 3.6 chars per token
    assert counter.count_message(user("a" * 360)) == 100 + MESSAGE_OVERHEAD == 104


def test_a_tool_result_costs_ten_more_for_its_framing():
    counter = TokenCounter("llama3.1:8b")
    call = ToolCall(id="c1", name="ls")
    result = tool_result(call, "a" * 358)  # 358 + len("ls") = 360 characters
    assert counter.count_message(result) == 100 + MESSAGE_OVERHEAD + TOOL_RESULT_OVERHEAD


def test_a_request_adds_tool_schemas_and_the_request_overhead():
    counter = TokenCounter("llama3.1:8b")
    schema_chars = len(json.dumps(SEARCH, ensure_ascii=False, sort_keys=True))
    request = counter.count_request([user("a" * 360)], [SEARCH])
    assert request == 104 + math.ceil(schema_chars / 3.6) + SEED_REQUEST_OVERHEAD


def report_for(messages: list[Message], chars_per_token: float, overhead: int = 3) -> int:
    """What an engine whose tokens are `chars_per_token` characters long would report."""
    chars = sum(len(m.content) for m in messages)
    framing = sum(4 + (10 if m.role == "tool" else 0) for m in messages)
    return round(chars / chars_per_token) + framing + overhead


def test_one_calibration_moves_the_ratio_thirty_percent_of_the_way():
    history = [user("x" * 4000), assistant("y" * 6000)]
    counter = TokenCounter("llama3.1:8b")
    counter.calibrate(history, [], report_for(history, 5.0))
    assert counter.ratio == pytest.approx(0.7 * 3.6 + 0.3 * 5.0)


def test_calibration_converges_to_the_reported_ratio():
    history = [user("x" * 4000), assistant("y" * 6000)]
    counter = TokenCounter("llama3.1:8b")
    reported = report_for(history, 5.0)
    for n in range(1, 16):
        counter.calibrate(history, [], reported)
        assert counter.ratio == pytest.approx(5.0 - 1.4 * 0.7**n, abs=1e-6)
    assert counter.count_request(history, []) == pytest.approx(reported, abs=15)
    longer = [*history, user("z" * 10000)]
    assert counter.count_request(longer, []) == pytest.approx(report_for(longer, 5.0), rel=0.02)


@pytest.mark.parametrize(("truth", "bound"), [(12.0, 6.0), (1.0, 2.0)])
def test_the_ratio_stays_within_two_and_six(truth, bound):
    history = [user("x" * 4000), assistant("y" * 6000)]
    counter = TokenCounter("qwen3:8b")
    reported = report_for(history, truth)
    for _ in range(40):
        counter.calibrate(history, [], reported)
        assert 2.0 <= counter.ratio <= 6.0
    assert counter.ratio == pytest.approx(bound, abs=1e-3)


def test_what_a_clamped_ratio_cannot_explain_goes_to_the_request_overhead():
    history = [user("x" * 4000), assistant("y" * 6000)]
    counter = TokenCounter("qwen3:8b")
    reported = report_for(history, 1.0)  # denser than any ratio allows (CJK, say)
    for _ in range(40):
        counter.calibrate(history, [], reported)
    assert counter.count_request(history, []) == pytest.approx(reported, abs=2)


def test_a_short_exchange_teaches_the_overhead_but_not_the_ratio():
    counter = TokenCounter("llama3.1:8b")
    counter.calibrate([user("hi")], [], 40)
    assert counter.ratio == 3.6
    assert counter.request_overhead(False) > SEED_REQUEST_OVERHEAD


@pytest.mark.parametrize("reported", [None, 0, -3])
def test_a_missing_report_teaches_nothing(reported):
    counter = TokenCounter("llama3.1:8b")
    history = [user("x" * 4000)]
    before = counter.count_request(history, [])
    counter.calibrate(history, [], reported)
    assert counter.count_request(history, []) == before
    assert counter.observations == 0


# --- tiktoken, offline ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o1-mini", "o200k_base"),
        ("o3", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-oss:20b", "o200k_base"),
        ("openai/gpt-oss-120b", "o200k_base"),
        ("gpt-oss-20b-Q4_K_M.gguf", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("llama3.1:8b", None),
        ("olmo2:7b", None),
        ("qwen3:8b", None),
    ],
)
def test_openai_family_names_select_their_encoding(model, encoding):
    assert openai_encoding_name(model) == encoding


def test_tiktoken_counts_offline_from_the_shipped_files(tmp_path):
    """In a fresh interpreter with an empty tiktoken cache and every socket refused."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    script = textwrap.dedent(
        """
        import sys

        def refuse_network(event, args):
            if event.startswith("socket.") or event.startswith("urllib."):
                raise RuntimeError(f"network use: {event}")

        sys.addaudithook(refuse_network)

        from engine.messages import ToolCall, tool_result, user
        from engine.tokens import TokenCounter, load_encoding

        assert load_encoding("cl100k_base").encode("hello world") == [15339, 1917]
        assert load_encoding("o200k_base").encode("hello world") == [24912, 2375]
        counter = TokenCounter("gpt-oss:20b")
        assert (counter.strategy, counter.encoding_name) == ("tiktoken", "o200k_base")
        assert counter.count_message(user("hello world")) == 2 + 4
        # the text is exact; a tool result's wrapper is the estimate's, as the heuristic's
        # (harmony frames a result in a header of its own, which the request overhead misses)
        call = ToolCall(id="c1", name="search")
        assert counter.count_message(tool_result(call, "hello world")) == 2 + 1 + 4 + 10
        print("ok")
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert list(cache.iterdir()) == []


def test_tiktoken_counts_text_exactly_and_learns_only_the_framing():
    counter = TokenCounter("gpt-4o")
    history = [system("You are terse."), user(" ".join(["hello world"] * 50))]
    words = counter.count_messages(history)
    assert words == (4 + 4) + (100 + 4)  # "You are terse." is 4 tokens; "hello world" 2
    counter.calibrate(history, [], words + 3 + 20)
    assert counter.request_overhead(False) == round(0.7 * 3 + 0.3 * 23)
    assert counter.count_messages(history) == words
    assert counter.ratio is None and not counter.estimate_is_exact


def test_a_tokenizer_from_the_engine_wins_over_tiktoken():
    counter = TokenCounter("gpt-oss:20b", tokenizer=WordTemplate())
    assert counter.strategy == "exact"


# --- choosing a counter for an engine ---------------------------------------------------------


class LendingEngine(Provider):
    """An engine that lends Brim its tokenizer, as the embedded one does."""

    kind = "embedded"

    def __init__(self, tokenizer: WordTemplate | None) -> None:
        super().__init__()
        self.tokenizer = tokenizer

    async def list_models(self) -> list[ModelInfo]:
        return []

    async def report(self, model: str) -> EngineReport:
        return EngineReport(provider=self.kind, model=model, window_rule="allocated")

    async def stream_chat(self, model, messages, options) -> AsyncIterator[StreamItem]:
        yield StreamDone(Usage())

    def segment_tokenizer(self, model: str) -> WordTemplate | None:
        return self.tokenizer


def test_an_engine_that_lends_its_tokenizer_gets_an_exact_counter():
    assert counter_for(LendingEngine(WordTemplate()), "smollm2").strategy == "exact"


@pytest.mark.parametrize(
    ("model", "strategy"), [("gpt-oss:20b", "tiktoken"), ("qwen3:8b", "heuristic")]
)
def test_an_engine_without_a_tokenizer_gets_a_counter_chosen_by_model_name(model, strategy):
    assert counter_for(LendingEngine(None), model).strategy == strategy
