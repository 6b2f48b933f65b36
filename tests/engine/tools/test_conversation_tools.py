"""update_work_state, summarize_context and retrieve_tool_result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.context.work_state import WorkState

pytestmark = pytest.mark.anyio


async def test_work_state_is_patched_field_by_field(registry, make_ctx, tmp_path: Path):
    ctx = make_ctx()
    await registry.call(
        "update_work_state", {"patch": {"goal": "migrate routes", "notes": {"a": 1}}}, ctx
    )
    outcome = await registry.call(
        "update_work_state", {"patch": {"notes": {"b": 2}, "phase": "auth"}}, ctx
    )
    assert not outcome.is_error, outcome.content
    state = json.loads((tmp_path / "work" / "state.json").read_text(encoding="utf-8"))
    assert state == {"goal": "migrate routes", "notes": {"a": 1, "b": 2}, "phase": "auth"}
    assert outcome.content.startswith("Work state saved.\ngoal: migrate routes")


async def test_todos_are_patched_by_id_and_an_unverified_completion_says_so(registry, make_ctx):
    ctx = make_ctx()
    todos = [{"id": "1", "content": "port /login"}, {"id": "2", "content": "port /logout"}]
    await registry.call("update_work_state", {"patch": {"todos": todos}}, ctx)
    done = [
        {"id": "1", "status": "completed", "verifiedBy": "pytest tests/auth -q"},
        {"id": "2", "status": "completed"},
    ]
    outcome = await registry.call("update_work_state", {"patch": {"todos": done}}, ctx)
    assert "- [completed] port /login (verified by: pytest tests/auth -q)" in outcome.content
    assert "- [completed] port /logout (unverified)" in outcome.content


async def test_a_patch_sent_as_bare_fields_or_as_json_text_is_accepted(registry, make_ctx):
    ctx = make_ctx()
    bare = await registry.call("update_work_state", '{"goal": "ship it"}', ctx)
    text = await registry.call("update_work_state", {"patch": '{"phase": "two"}'}, ctx)
    assert not bare.is_error and not text.is_error
    assert ctx.work_state.read() == {"goal": "ship it", "phase": "two"}


async def test_a_malformed_patch_is_refused_and_the_state_kept(registry, make_ctx):
    ctx = make_ctx()
    await registry.call("update_work_state", {"patch": {"goal": "g"}}, ctx)
    bad = await registry.call(
        "update_work_state", {"patch": {"todos": [{"id": "1", "status": "finished"}]}}, ctx
    )
    assert bad.is_error and "not one of" in bad.content
    assert ctx.work_state.read() == {"goal": "g"}


async def test_work_state_is_unavailable_without_a_work_folder(registry, make_ctx):
    outcome = await registry.call(
        "update_work_state", {"patch": {"goal": "g"}}, make_ctx(work_state=None)
    )
    assert outcome.is_error and "not available" in outcome.content


async def test_a_work_state_on_an_unwritable_path_fails_without_crashing(
    registry, make_ctx, tmp_path: Path
):
    (tmp_path / "blocker").write_text("a file where a folder should be", encoding="utf-8")
    ctx = make_ctx(work_state=WorkState(tmp_path / "blocker" / "state.json"))
    outcome = await registry.call("update_work_state", {"patch": {"goal": "g"}}, ctx)
    assert outcome.is_error and "could not be saved" in outcome.content


async def test_summarize_context_runs_the_compaction_hook_and_reports_it(registry, make_ctx):
    calls: list[str] = []

    async def compact() -> str:
        calls.append("compact")
        return "Compacted 64 → 12 messages (saved ~48000 tokens)"

    outcome = await registry.call("summarize_context", "{}", make_ctx(compact=compact))
    assert calls == ["compact"]
    assert outcome.content == "Compacted 64 → 12 messages (saved ~48000 tokens)"


async def test_summarize_context_without_a_hook_or_with_a_failing_one_is_an_error(
    registry, make_ctx
):
    missing = await registry.call("summarize_context", "", make_ctx())
    assert missing.is_error and "compaction is not available" in missing.content

    async def broken() -> str:
        raise RuntimeError("summarizer offline")

    failed = await registry.call("summarize_context", "", make_ctx(compact=broken))
    assert failed.is_error and "summarizer offline" in failed.content
    assert "unchanged" in failed.content


async def test_a_stored_result_is_read_back_page_by_page(registry, make_ctx):
    ctx = make_ctx(result_budget_chars=1_400)
    body = "".join(f"row {i:04}\n" for i in range(600))  # 5,400 characters
    assert ctx.result_store.store("call_big", body)
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        outcome = await registry.call(
            "retrieve_tool_result", {"tool_call_id": "call_big", "offset": offset}, ctx
        )
        assert not outcome.is_error and not outcome.truncated, outcome.content
        lines = outcome.content.split("\n")
        assert lines[0].startswith(f"[Stored result call_big: characters {offset:,}-")
        assert lines[0].endswith(" of 5,400.]")
        pages.append("\n".join(lines[1:-1]) + "\n")
        if lines[-1] == "[End of the stored result.]":
            offset = None
        else:
            offset = int(lines[-1].rsplit("offset ", 1)[1].rstrip(".]"))
    assert "".join(pages) == body
    assert len(pages) == 6


async def test_retrieving_a_result_that_was_never_stored_says_to_rerun_the_tool(registry, make_ctx):
    outcome = await registry.call("retrieve_tool_result", {"tool_call_id": "call_x"}, make_ctx())
    assert outcome.is_error
    assert "Re-run the original tool call" in outcome.content
    no_store = await registry.call(
        "retrieve_tool_result", {"tool_call_id": "call_x"}, make_ctx(tool_results_dir=None)
    )
    assert no_store.is_error and "Re-run the original tool call" in no_store.content


async def test_an_offset_past_the_end_is_an_error(registry, make_ctx):
    ctx = make_ctx()
    ctx.result_store.store("c1", "short")
    outcome = await registry.call("retrieve_tool_result", {"tool_call_id": "c1", "offset": 99}, ctx)
    assert outcome.is_error and "past the end" in outcome.content
