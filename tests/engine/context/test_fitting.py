"""The fit rung: after clearing, compaction and trimming, what is still above the window (the
newest step, which the other rungs keep whole) is cut to the room left, with a marker, and
the request fits. Property: whatever one answer's calls and results weigh, no request the
ladder builds counts above the window (less the answer's reserve where the engine counts it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.context.constants import RETRIEVE_TOOL
from engine.context.fitting import ARGUMENT_KEEP_CHARS, fit_messages
from engine.context.history import tool_pairing_problems
from engine.context.manager import ContextManager
from engine.events import NOTICE_CUT_TO_FIT, NoticeEvent
from engine.messages import Message, ToolCall, assistant, system, tool_result, user
from engine.tools.result_store import ToolResultStore

from .histories import FakeSummarizer, count, text, total

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WINDOW = 8192


def _step(sizes: list[int], *, name: str = "read_file", args: str | None = None) -> list[Message]:
    calls = tuple(
        ToolCall(f"call_{i}", name, args or json.dumps({"path": f"src/file{i}.txt"}))
        for i in range(len(sizes))
    )
    results = [
        tool_result(c, text(n, f"line{i}"))
        for i, (c, n) in enumerate(zip(calls, sizes, strict=True))
    ]
    return [assistant("", calls), *results]


def _history(step: list[Message], earlier: int = 0) -> list[Message]:
    msgs: list[Message] = [system("You are Brim, a careful coding agent.")]
    for i in range(earlier):
        msgs += [user(f"Earlier question {i}: " + text(400, "ask")), assistant(text(300, "said"))]
    return [*msgs, user("Read every file and tell me which ones mention the deadline."), *step]


def _prepare(manager: ContextManager, history: list[Message], overhead: int = 0):
    return asyncio.run(manager.prepare(history, overhead_tokens=overhead, iterations_used=2))


def _manager(window: int = WINDOW, **kw) -> tuple[ContextManager, list]:
    events: list = []
    return ContextManager(window=window, count_message=count, sink=events.append, **kw), events


def test_one_answer_with_300_reads_is_cut_to_the_window_and_the_model_is_told(tmp_path: Path):
    store = ToolResultStore(tmp_path / "results")
    manager, events = _manager(store_result=store.store)
    history = _history(_step([1024] * 300))
    assert total(history) > 10 * WINDOW  # what went out whole before

    prepared = _prepare(manager, history, overhead=900)

    assert manager.usage(prepared.request, 900).used <= manager.budget.prompt_space
    assert tool_pairing_problems(prepared.history) == []
    answer = next(m for m in prepared.history if m.tool_calls)
    results = [m for m in prepared.history if m.role == "tool"]
    assert 1 <= len(answer.tool_calls) == len(results) < 300
    assert f"the other {300 - len(results)} (read_file ×{300 - len(results)}) ran" in (
        results[-1].content
    )
    assert all("[Result cut: " in m.content for m in results)
    assert f'call {RETRIEVE_TOOL} with tool_call_id "call_0"' in results[0].content
    told = [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_CUT_TO_FIT]
    assert len(told) == 1 and told[0].details["calls_left_out"] == 300 - len(results)
    assert "Read every file" in prepared.request[1].content  # the user's request stays


def test_a_cut_result_is_stored_whole_and_the_offset_it_names_reads_on(tmp_path: Path):
    store = ToolResultStore(tmp_path / "results")
    manager, _ = _manager(store_result=store.store)
    history = _history(_step([60_000]))

    prepared = _prepare(manager, history)

    result = prepared.history[-1]
    assert manager.usage(prepared.request).used <= manager.budget.prompt_space
    head, notice = result.content.rsplit("\n", 1)
    offset = int(notice.split("and offset ")[1].split(" ")[0])
    assert offset == len(head) + 1 or offset == len(head)
    original = history[-1].content
    assert original.startswith(head)
    assert store.read("call_0", offset).text == original[offset:]


def test_a_denied_write_of_100_kb_goes_out_with_its_content_cut_as_valid_json():
    content = text(100_000, "payload")
    args = json.dumps({"path": "big.txt", "content": content})
    call = ToolCall("call_w", "write_file", args)
    step = [assistant("", (call,)), tool_result(call, "Denied: the user did not approve.")]
    manager, events = _manager()

    prepared = _prepare(manager, _history(step))

    assert manager.usage(prepared.request).used <= manager.budget.prompt_space
    sent = next(m for m in prepared.history if m.tool_calls).tool_calls[0]
    parsed = json.loads(sent.arguments)
    assert parsed["path"] == "big.txt"
    assert parsed["content"].startswith(content[:ARGUMENT_KEEP_CHARS])
    assert "cut to fit the context window: 100,000 characters in all" in parsed["content"]
    assert prepared.history[-1].content == "Denied: the user did not approve."
    assert [
        e.details["arguments_cut"] for e in events if getattr(e, "kind", "") == NOTICE_CUT_TO_FIT
    ] == [1]


def test_a_step_that_fits_is_left_alone():
    history = _history(_step([800] * 4))
    result = fit_messages(history, budget=total(history), count_message=count)
    assert result.messages == history and not result.changed


@st.composite
def steps(draw: st.DrawFn) -> tuple[list[Message], int, int]:
    """A newest step of 1-320 calls with results of 0-12,000 characters (sometimes a call
    with a huge argument), after 0-6 earlier exchanges; a window and an output reserve."""
    sizes = draw(st.lists(st.integers(0, 12_000), min_size=1, max_size=320))
    step = _step(sizes)
    if draw(st.booleans()):
        big = ToolCall(
            "call_big",
            "write_file",
            json.dumps({"path": "x", "content": text(draw(st.integers(0, 150_000)))}),
        )
        step = [assistant("", (big,)), tool_result(big, "Denied."), *step]
    window = draw(st.sampled_from([2048, 4096, 8192, 32768]))
    reserve = draw(st.sampled_from([0, 0, 256, 1024]))
    return _history(step, draw(st.integers(0, 6))), window, reserve


@PROPERTY
@given(steps(), st.booleans(), st.integers(0, 600))
def test_no_request_the_ladder_builds_counts_above_the_window(drawn, summarizer, overhead):
    history, window, reserve = drawn
    manager, _ = _manager(
        window, output_reserve=reserve, summarize=FakeSummarizer() if summarizer else None
    )

    prepared = _prepare(manager, history, overhead)

    assert manager.usage(prepared.request, overhead).used <= manager.budget.prompt_space
    assert tool_pairing_problems(prepared.history) == []
    assert prepared.history[0] is history[0]
    kept_ids = {m.tool_call_id for m in prepared.history if m.role == "tool"}
    for message in prepared.history:
        if message.role == "tool" and message.meta_value("cut_to_fit"):
            assert "[Result cut: " in message.content
    assert kept_ids  # the newest answer always keeps a call and its result
