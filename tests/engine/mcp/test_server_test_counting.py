"""The editor's Test of an MCP server counts the schemas as the agent's engine counts them,
says how, and keeps the listing where the agent's conversations read it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from engine.agent.probe import check_agent_mcp_server
from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.mcp.listing_cache import ListingCache
from engine.mcp.probe import check_mcp_server
from tests.helpers.fake_engines import FakeLlamaServer

TIME = McpServer(
    "time",
    command=(str(Path(sys.executable).parent / "mcp-server-time"), "--local-timezone", "UTC"),
)


def test_a_llama_server_agent_has_its_schemas_counted_by_the_server(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        agent = AgentConfig(name="t", provider="llamacpp", base_url=fake.url, model="")
        result = asyncio.run(check_agent_mcp_server(agent, TIME, tmp_path))
        asked = len(fake.requests_to("/tokenize"))
    assert result.fault == "" and result.counting.startswith("exact: llama-server")
    assert asked > 0  # the server counted them, not Brim's fallback
    o200k = asyncio.run(check_mcp_server(TIME))
    assert o200k.counting.startswith("estimated") or "o200k" in o200k.counting
    assert {t.name: t.tokens for t in result.tools} != {t.name: t.tokens for t in o200k.tools}
    assert all(t.tokens > 0 for t in result.tools)
    assert result.kept and ListingCache(tmp_path).read(TIME) is not None


def test_an_engine_that_cannot_be_reached_still_tests_the_server_with_estimated_counts(
    tmp_path: Path,
):
    agent = AgentConfig(name="t", provider="llamacpp", base_url="http://127.0.0.1:9", model="")
    result = asyncio.run(check_agent_mcp_server(agent, TIME, tmp_path))
    assert result.fault == "" and len(result.tools) == 2
    assert not result.counting.startswith("exact")
    assert all(t.tokens > 0 for t in result.tools)
