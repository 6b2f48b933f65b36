"""The agent probe on a model that cannot call tools says its MCP servers are not offered."""

from __future__ import annotations

from engine.agent.probe import compare
from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.providers.base import EngineReport

GIT = McpServer("git", command=("mcp-server-git",))


def _agent(*servers: McpServer) -> AgentConfig:
    return AgentConfig(name="t", provider="ollama", model="gemma3:270m", mcp=servers)


def test_the_probe_says_mcp_servers_are_not_offered_to_a_model_that_cannot_call_tools():
    report = EngineReport(provider="ollama", model="gemma3:270m", served=4096, tool_calls=False)
    warnings = compare(report, _agent(GIT)).warnings
    assert any("its 1 MCP server (git) is not offered" in w for w in warnings)


def test_the_probe_says_nothing_of_mcp_where_tools_are_called_or_not_known():
    for tool_calls in (True, None):
        report = EngineReport(provider="ollama", model="m", served=4096, tool_calls=tool_calls)
        assert not [w for w in compare(report, _agent(GIT)).warnings if "MCP" in w]
    no_tools = EngineReport(provider="ollama", model="m", served=4096, tool_calls=False)
    assert not [w for w in compare(no_tools, _agent()).warnings if "MCP" in w]
