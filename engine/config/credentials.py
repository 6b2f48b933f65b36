"""An agent's engine API key: where it comes from, and how it may be mentioned.

A vLLM or SGLang server started with `--api-key`, or a llama-server or Ollama behind a
keyed proxy, answers 401 without `Authorization: Bearer KEY`. The key is a secret: it
travels in that header and nowhere else. Brim's own output names only its source ("set
(from BRIM_VLLM_KEY env)"), never the value; a detached process that needs it gets it in
its environment (readable only by the same user), never on its command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.config.agent import AgentConfig

# The variable a Brim process hands a key to a child it starts (the detached reflection).
CHILD_KEY_VARIABLE = "BRIM_ENGINE_API_KEY"


@dataclass(frozen=True)
class ApiKey:
    value: str | None = field(repr=False)  # None: no key will be sent
    source: str  # "" (none configured), "agent file", or "NAME env"
    problem: str = ""  # why a configured key is missing

    def describe(self) -> str:
        """The key's state as it may be shown: `set (from X env)`, never the value."""
        if self.value:
            return f"set (from {self.source})"
        if self.problem:
            return f"missing ({self.problem})"
        return "not set"


def agent_api_key(agent: AgentConfig) -> ApiKey:
    """The key the agent's engine gets: `api_key`, else the variable `api_key_env` names."""
    if agent.provider == "embedded":
        return ApiKey(None, "")
    if agent.api_key:
        return ApiKey(agent.api_key, "the agent file")
    name = agent.api_key_env
    if not name:
        return ApiKey(None, "")
    value = os.environ.get(name, "").strip()
    if not value:
        return ApiKey(None, f"{name} env", f"{name} is not set in the environment")
    if not all("!" <= c <= "~" for c in value):
        return ApiKey(None, f"{name} env", f"{name} holds spaces or non-ASCII characters")
    return ApiKey(value, f"{name} env")


@dataclass(frozen=True)
class Credentials:
    """Every engine key Brim holds: the variables that carry them and their values, so
    that what a tool starts or returns never carries one."""

    variables: frozenset[str] = frozenset()
    values: tuple[str, ...] = field(default=(), repr=False)


def known_credentials(agents: Iterable[AgentConfig]) -> Credentials:
    """The keys of `agents` (every configured agent, not only the one in use) and the
    variable Brim hands a key to its own children in."""
    variables = {CHILD_KEY_VARIABLE}
    values: list[str] = []
    for agent in agents:
        if agent.api_key_env:
            variables.add(agent.api_key_env)
        key = agent_api_key(agent).value
        if key and key not in values:
            values.append(key)
    child_key = os.environ.get(CHILD_KEY_VARIABLE, "").strip()
    if child_key and child_key not in values:
        values.append(child_key)
    return Credentials(frozenset(variables), tuple(values))
