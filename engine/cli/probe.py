"""`brim probe`: ask an engine what window it really serves, and how it is reached."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from engine.cli.agents import agent_from_flags
from engine.cli.arguments import add_data_dir_flag, add_engine_flags
from engine.cli.errors import EXIT_UNREACHABLE
from engine.cli.terminal import say, shown
from engine.config import AgentConfig
from engine.config.credentials import agent_api_key
from engine.mcp.probe import tool_calling_warnings
from engine.paths import BrimPaths
from engine.providers.cache_reuse import reuse_line
from engine.providers.errors import ProviderError
from engine.redaction import without_known
from engine.session import probe_window, provider_for


def add_probe_parser(sub: Any) -> None:
    probe = sub.add_parser("probe", help="ask an engine what window it really serves")
    probe.add_argument("--agent", help="probe the engine this agent names")
    add_engine_flags(probe)
    add_data_dir_flag(probe)
    probe.add_argument("--json", action="store_true", help="print one JSON object")


async def _probe(agent: AgentConfig) -> dict[str, Any]:
    provider = provider_for(agent)
    told = False

    def on_wait(waited_s: float, limit_s: float) -> None:
        nonlocal told
        if not told:  # once: stdout stays the one JSON answer
            told = True
            print(
                f"brim probe: the engine is loading its model; waiting (up to {limit_s:.0f} s)",
                file=sys.stderr,
            )

    try:
        resolution = await probe_window(provider, agent, on_wait, reuse=True)
        offload = getattr(provider, "offload", None)  # read while the engine is up
        spill = getattr(provider, "spill", None)
        reuse = provider.cache_reuse(agent.model)
    finally:
        await provider.aclose()
    result = resolution.to_probe_json()
    # An agent with MCP servers on a model that cannot call tools: none of them is offered.
    result["warnings"] = [
        *result["warnings"],
        *tool_calling_warnings(agent.mcp, resolution.tool_calls),
    ]
    # Whether the server moves cached chunks to new positions (where the checkpoint goes).
    result["cache_reuse"] = reuse.to_json()
    if offload is not None:  # the embedded engine: where llama.cpp put the model
        result["offload"] = offload
    if spill is not None:  # Ollama: part of the model is on the CPU (its text is a warning)
        result["spill"] = spill
    route = getattr(provider, "route", None)
    if route is not None:  # the engines reached over HTTP: which way, and with what key
        result["route"] = route.to_json()
        result["route_text"] = route.describe()
        result["api_key"] = agent_api_key(agent).describe()
    return result


def offload_text(offload: dict[str, Any]) -> str:
    total = offload.get("layers_total")
    layers = f"{offload['layers_offloaded']} of {total}" if total else "no"
    devices = ", ".join(offload.get("devices") or []) or "none"
    kv = "GPU" if offload.get("kv_on_gpu") else "CPU"
    return (
        f"{offload['backend']} backend, {layers} layers on the GPU (devices: {devices}), "
        f"KV cache on the {kv}"
    )


def cmd_probe(args: argparse.Namespace, paths: BrimPaths) -> int:
    """What the engine serves, on stdout; what went wrong, on stderr. Whatever the engine
    said (a model name, an error body) is printed with its control characters shown and
    without the agent's key."""
    agent = agent_from_flags(args, paths)
    keys = [agent_api_key(agent).value or ""]
    try:
        result = asyncio.run(_probe(agent))
    except ProviderError as exc:
        say(f"brim probe: {exc.message}", keys)
        return EXIT_UNREACHABLE if exc.kind == "unreachable" else 1
    if args.json:  # JSON escapes every control character itself
        print(without_known(json.dumps(result), keys))
        return 0
    head = f"{result['provider']} {result['model']}: window {result['window']:,}"
    lines = [f"{head} ({result['source']})"]
    if "route" in result:
        lines.append(f"  route: {result['route_text']}")
        lines.append(f"  api key: {result['api_key']}")
    if "offload" in result:
        lines.append(f"  offload: {offload_text(result['offload'])}")
    lines.append(f"  {reuse_line(result['cache_reuse']['reuses'])}")
    lines.extend(f"  warning: {warning}" for warning in result["warnings"])
    for line in lines:
        print(shown(line, keys))
    return 0
