"""The guided checkpoint (the path small models fall back to) keeps the progress of the span
it summarizes: Done, In Progress and Covered So Far come from that span's own tool calls, and
what outgrows the checkpoint's cap goes to a stored file `retrieve_tool_result` reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.context.checkpoint import checkpoint_entries, covered_items
from engine.context.compaction import SummaryRequest, SummaryResult, compact
from engine.context.guided import GUIDED_SYSTEM
from engine.context.stored_progress import stored_progress
from engine.messages import Message, system, user
from engine.tools.result_store import ToolResultStore
from tests.engine.context.histories import Ids, count, cycle, text


async def _small_model(request: SummaryRequest) -> SummaryResult:
    """A model that cannot write the whole schema but answers the goal question."""
    if request.messages[0].content == GUIDED_SYSTEM and "trying to get done" in str(
        request.messages[-1].content
    ):
        return SummaryResult("Audit the source tree.", "stop")
    if request.messages[0].content == GUIDED_SYSTEM:
        return SummaryResult("none", "stop")
    return SummaryResult("rambling " * 80, "length")


def _span(ids: Ids, reads: int) -> list[Message]:
    out: list[Message] = [user("Audit the source tree and fix what you find.")]
    for i in range(reads):
        out += cycle(ids, 120, "read_file", path=f"src/pkg{i % 7}/module_{i}.py")
    out += cycle(ids, 80, "edit_file", path="src/pkg1/module_1.py")
    out += cycle(ids, 80, "run_command")
    return out


def _history(reads: int) -> list[Message]:
    ids = Ids()
    tail = [user("Go on with the audit. " + text(1000)), *cycle(ids, 100, "read_file")]
    return [system("You audit code."), *_span(ids, reads), *tail]


def test_a_guided_checkpoint_records_the_edits_commands_and_reads_of_its_span():
    result = asyncio.run(
        compact(_history(6), window=8192, count_message=count, summarize=_small_model,
                tail_tokens=300)
    )  # fmt: skip
    assert result.ok and result.source == "guided"
    entries = checkpoint_entries(result.checkpoint)
    assert any("src/pkg1/module_1.py" in e and "edited" in e for e in entries["Done"])
    assert any("pytest -q" in e for e in entries["Done"])
    assert entries["In Progress"] and "run_command" in entries["In Progress"][0]
    assert {f"`src/pkg{i % 7}/module_{i}.py`" for i in range(6)} <= set(
        covered_items(result.checkpoint)
    )
    shown = result.messages[1].content  # what the model is sent for it
    assert "Already done:" in shown and "You were working on:" in shown


def test_paths_beyond_the_cap_go_to_a_stored_file_that_retrieve_tool_result_reads(
    tmp_path: Path,
):
    store = ToolResultStore(tmp_path / "tool-results")
    history = _history(300)
    first = asyncio.run(
        compact(history, window=4096, count_message=count, summarize=_small_model,
                tail_tokens=300, store_result=store.store)
    )  # fmt: skip
    assert first.ok
    (ref,) = stored_progress(first.checkpoint)
    stored = store.read(ref).text  # what retrieve_tool_result answers for that id
    kept = set(covered_items(first.checkpoint))
    assert len(kept) < 300  # the cap did leave paths out of the checkpoint itself
    lost = [
        f"src/pkg{i % 7}/module_{i}.py"
        for i in range(300)
        if f"`src/pkg{i % 7}/module_{i}.py`" not in kept
        and f"src/pkg{i % 7}/module_{i}.py" not in stored
    ]
    assert lost == []
    assert f'tool_call_id "{ref}"' in first.messages[1].content
    # The next compaction names the stored file again, whatever else it keeps.
    ids = Ids("later")
    more = [*first.messages, user("Next folder. " + text(400)), *cycle(ids, 900, "read_file")]
    more += [user("And the next. " + text(400)), *cycle(ids, 100, "read_file")]
    second = asyncio.run(
        compact(more, window=4096, count_message=count, summarize=_small_model,
                tail_tokens=300, store_result=store.store)
    )  # fmt: skip
    assert second.ok and ref in stored_progress(second.checkpoint)
