"""`brim probe` of an agent with MCP servers on a model that cannot call tools says, in its
warnings, that none of the servers is offered; on a model that calls tools it says nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeOllama, OllamaModel

MODEL = "gemma3:270m"


def _probe(tmp_path: Path, capabilities: tuple[str, ...]) -> list[str]:
    model = OllamaModel(MODEL, context_length=32768, capabilities=capabilities)
    with FakeOllama([model], default_num_ctx=4096) as fake:
        agents = tmp_path / "config" / "agents"
        agents.mkdir(parents=True, exist_ok=True)
        (agents / "tools.toml").write_text(
            f'name = "tools"\nprovider = "ollama"\nbase_url = "{fake.url}"\nmodel = "{MODEL}"\n'
            '[[mcp]]\nname = "git"\ncommand = ["mcp-server-git"]\n',
            encoding="utf-8",
        )
        run = run_brim(["probe", "--agent", "tools", "--json"], data_dir=tmp_path)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["warnings"]


def test_the_probe_cli_warns_that_mcp_servers_are_not_offered_to_a_model_without_tools(
    tmp_path: Path,
):
    warnings = _probe(tmp_path, ("completion",))
    assert any("its 1 MCP server (git) is not offered" in w for w in warnings), warnings


def test_the_probe_cli_says_nothing_of_mcp_for_a_model_that_calls_tools(tmp_path: Path):
    warnings = _probe(tmp_path, ("completion", "tools"))
    assert not [w for w in warnings if "MCP" in w], warnings
