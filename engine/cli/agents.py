"""The agent a command runs: `--agent NAME`, else one built from engine flags, else the
default agent."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.errors import CliError
from engine.config import (
    AgentConfig,
    AgentConfigError,
    DuplicateAgentName,
    default_agent,
    load_agents,
)
from engine.paths import BrimPaths

# Engine flags and the agent settings they override.
_FLAG_FIELDS = (
    ("provider", "provider"),
    ("base_url", "base_url"),
    ("model", "model"),
    ("num_ctx", "num_ctx"),
    ("max_context_tokens", "max_context_tokens"),
    ("max_tokens", "max_tokens"),
    ("request_timeout", "request_timeout_s"),
    ("api_key_env", "api_key_env"),
)


def agent_from_flags(args: argparse.Namespace, paths: BrimPaths) -> AgentConfig:
    """The agent a command runs: `--agent NAME`, else one built from engine flags, else the
    default agent as its file says (the window runs that file too, and the conversation is
    filed under it), or the built-in default where no such file exists. Engine flags on top
    of the agent override its fields."""
    if getattr(args, "agent", None):
        base = named_agent(args.agent, paths)
    elif args.provider:
        base = default_agent().model_copy(
            update={"name": f"{args.provider}-adhoc", "provider": args.provider, "model": ""}
        )
        base = base.model_copy(update={"base_url": None})
    else:
        base = _default_agent(paths)
    return with_flags(base, args)


def _default_agent(paths: BrimPaths) -> AgentConfig:
    """The agent file named "default" when the agents folder has one (a pin saved in it
    holds headless too), else the built-in default agent. A default file that does not load
    is an error, never a silent fall back to the built-in settings."""
    built_in = default_agent()
    agents, errors = load_agents(paths.agents_dir)
    if any(a.name == built_in.name for a in agents):
        return named_agent(built_in.name, paths)
    for error in errors:
        if error.path is not None and error.path.stem == built_in.name:
            raise CliError(f"the default agent's file does not load:\n  {error}")
    return built_in


def named_agent(name: str, paths: BrimPaths) -> AgentConfig:
    """The agent file named `name` in the agents folder."""
    agents, errors = load_agents(paths.agents_dir)
    _refuse_ambiguous(name, agents, errors)
    for agent in agents:
        if agent.name == name:
            return agent
    problems = "".join(f"\n  {e}" for e in errors)
    raise CliError(f"no agent named {name!r} in {paths.agents_dir}{problems}")


def with_flags(base: AgentConfig, args: argparse.Namespace) -> AgentConfig:
    """`base` with the engine flags that were given in place of its settings."""
    updates: dict[str, Any] = {}
    for flag, field in _FLAG_FIELDS:
        value = getattr(args, flag, None)
        if value is not None:
            updates[field] = value
    if updates.get("api_key_env") and base.api_key is not None:
        updates["api_key"] = None  # the flag names where the key is; it replaces the file's
    return base.model_copy(update=updates) if updates else base


def _refuse_ambiguous(name: str, agents: list[AgentConfig], errors: list[AgentConfigError]) -> None:
    """Two agent files named `name`: running the first by file name would be a silent
    guess at which one the user meant, so the command stops and names every file."""
    same = [e.path for e in errors if isinstance(e, DuplicateAgentName) and e.name == name]
    if not same:
        return
    first = next((a.source_path for a in agents if a.name == name), None)
    files = [str(p) for p in (first, *same) if p is not None]
    raise CliError(
        f"{len(files)} agent files are named {name!r}: {' and '.join(files)}; "
        "rename one (its `name` key) so --agent can tell them apart"
    )
