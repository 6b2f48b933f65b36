"""The listing a server gave last, kept for the next conversation: by command, URL and
environment; a file Brim cannot read is no listing."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types

from engine.config.mcp_servers import McpServer
from engine.mcp.catalog import entries
from engine.mcp.listing_cache import ListingCache

GIT = McpServer("git", command=("mcp-server-git", "--repository", "/src/a"))
TOOLS = [
    types.Tool(
        name="git_status",
        description="Shows the working tree status",
        input_schema={"type": "object", "properties": {"repo_path": {"type": "string"}}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
]


def test_a_kept_listing_reads_back_as_the_same_tools_with_their_hints(tmp_path: Path):
    cache = ListingCache(tmp_path)
    assert cache.read(GIT) is None
    assert cache.write(GIT, TOOLS)
    assert not cache.write(GIT, TOOLS)  # the same listing: the file is left alone
    back = cache.read(GIT)
    assert back is not None
    assert entries(GIT, back) == entries(GIT, TOOLS)
    assert entries(GIT, back)[0].read_only


def test_another_command_line_or_environment_reads_no_old_listing(tmp_path: Path):
    cache = ListingCache(tmp_path)
    cache.write(GIT, TOOLS)
    other = McpServer("git", command=("mcp-server-git", "--repository", "/src/b"))
    with_env = McpServer("git", command=GIT.command, env=(("GIT_PAGER", "cat"),))
    assert cache.read(other) is None and cache.read(with_env) is None
    # The approval rule, the tier and the timeout change nothing the server lists.
    auto = McpServer("git", command=GIT.command, approve="auto", tier="always", timeout_s=5)
    assert cache.read(auto) is not None


def test_a_damaged_listing_file_is_no_listing(tmp_path: Path):
    cache = ListingCache(tmp_path)
    cache.write(GIT, TOOLS)
    cache.path(GIT).write_text('{"format": 1, "key": "x", "tools": [', encoding="utf-8")
    assert cache.read(GIT) is None
    cache.path(GIT).write_text('{"format": 1, "tools": [{"name": 3}]}', encoding="utf-8")
    assert cache.read(GIT) is None
