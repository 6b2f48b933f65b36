"""The registry: stable schemas, and calls that always come back as something to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.tools import Tool, ToolRegistry, builtin_tools, default_registry
from engine.tools.builtin import APPROVAL_TOOLS

pytestmark = pytest.mark.anyio

EXPECTED = [
    "edit_file",
    "list_directory",
    "read_file",
    "retrieve_tool_result",
    "run_command",
    "search_files",
    "summarize_context",
    "update_work_state",
    "write_file",
]


def test_the_default_tools_are_advertised_sorted_by_name():
    schemas = default_registry().schemas()
    assert [s["function"]["name"] for s in schemas] == EXPECTED
    for schema in schemas:
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        assert schema["function"]["description"]


def test_two_registries_advertise_byte_identical_json():
    first = json.dumps(default_registry().schemas(), ensure_ascii=False)
    second = json.dumps(default_registry().schemas(), ensure_ascii=False)
    assert first.encode() == second.encode()


def test_changing_a_returned_schema_does_not_change_the_next_one():
    registry = default_registry()
    before = json.dumps(registry.schemas())
    registry.schemas()[0]["function"]["parameters"]["properties"].clear()
    assert json.dumps(registry.schemas()) == before


def test_registration_order_does_not_change_the_schemas():
    tools = list(builtin_tools())
    assert ToolRegistry(reversed(tools)).schemas() == ToolRegistry(tools).schemas()


def test_exactly_the_three_changing_tools_need_approval():
    assert sorted(APPROVAL_TOOLS) == ["edit_file", "run_command", "write_file"]


def test_a_subset_keeps_only_the_named_tools():
    registry = default_registry()
    assert registry.only(["read_file", "nope"]).names() == ["read_file"]
    assert "run_command" not in registry.without(["run_command"])


async def test_an_unknown_tool_is_an_error_listing_the_real_ones(registry, make_ctx):
    outcome = await registry.call("delete_everything", "{}", make_ctx())
    assert outcome.is_error
    assert "no tool named 'delete_everything'" in outcome.content
    assert "read_file" in outcome.content


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("{}", "read_file needs path (string)"),
        ('{"path": 12}', "argument 'path' must be a string"),
        ('{"path": "a.txt", "offset": "three"}', "argument 'offset' must be an integer"),
    ],
)
async def test_bad_arguments_come_back_as_errors_the_model_can_fix(
    registry, make_ctx, arguments: str, message: str
):
    outcome = await registry.call("read_file", arguments, make_ctx())
    assert outcome.is_error and message in outcome.content


async def test_a_tool_that_crashes_returns_an_error_instead_of_raising(make_ctx):
    async def explode(args, ctx):
        raise KeyError("surprise")

    registry = ToolRegistry(
        [Tool("explode", "Fails.", {"type": "object", "properties": {}}, explode)]
    )
    outcome = await registry.call("explode", None, make_ctx())
    assert outcome.is_error and "failed unexpectedly (KeyError" in outcome.content


async def test_an_oversized_result_is_cut_stored_and_readable_through_retrieve(
    registry, make_ctx, workspace: Path
):
    ctx = make_ctx(result_budget_chars=1_500)
    command = "for i in $(seq 1 2000); do echo row $i; done"
    outcome = await registry.call("run_command", {"command": command}, ctx, call_id="call_42")
    assert outcome.truncated and len(outcome.content) <= 1_500
    assert outcome.chars > 10_000
    assert 'tool_call_id "call_42"' in outcome.content
    offset = int(outcome.content.rsplit("offset ", 1)[1].split()[0])
    more = await registry.call(
        "retrieve_tool_result", {"tool_call_id": "call_42", "offset": offset}, ctx
    )
    assert not more.is_error
    seen = outcome.content.rsplit("\n", 1)[0].splitlines()[-1]
    following = more.content.splitlines()[1]
    assert int(following.split()[1]) == int(seen.split()[1]) + 1


async def test_a_cut_result_with_an_unwritable_store_tells_the_model_to_narrow_the_request(
    registry, make_ctx, workspace: Path, tmp_path: Path
):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    ctx = make_ctx(result_budget_chars=1_000, tool_results_dir=tmp_path / "file" / "results")
    (workspace / "big.txt").write_text("word " * 2_000 + "\n", encoding="utf-8")
    outcome = await registry.call("read_file", {"path": "big.txt"}, ctx, call_id="c1")
    assert outcome.truncated and not outcome.is_error
    assert "re-run read_file with a narrower request" in outcome.content


async def test_every_result_size_is_recorded_per_tool(registry, make_ctx, workspace: Path):
    (workspace / "a.txt").write_text("hello\n", encoding="utf-8")
    ctx = make_ctx()
    read = await registry.call("read_file", {"path": "a.txt"}, ctx)
    listing = await registry.call("list_directory", {}, ctx)
    failed = await registry.call("read_file", {"path": "missing"}, ctx)
    assert dict(ctx.metrics.by_tool()) == {
        "read_file": read.chars + failed.chars,
        "list_directory": listing.chars,
    }
    assert ctx.metrics.calls("read_file") == 2
