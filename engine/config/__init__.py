"""Brim's configuration: agent files (schema, validation, loading, saving) and app settings."""

from engine.config.agent import AgentConfig, default_agent
from engine.config.agent_files import (
    agent_files,
    agent_path,
    ensure_default_agent,
    load_agent,
    load_agents,
    parse_agent_text,
    render_agent,
    save_agent,
)
from engine.config.errors import (
    AgentConfigError,
    AgentFileChanged,
    ConfigError,
    DuplicateAgentName,
    Problem,
)
from engine.config.field_spec import FieldProblem, FieldSpec
from engine.config.schema import AGENT_FIELDS, DEFAULT_SYSTEM_PROMPT, FIELDS_BY_NAME
from engine.config.settings import load_settings, update_settings

__all__ = [
    "AGENT_FIELDS",
    "DEFAULT_SYSTEM_PROMPT",
    "FIELDS_BY_NAME",
    "AgentConfig",
    "AgentConfigError",
    "AgentFileChanged",
    "ConfigError",
    "DuplicateAgentName",
    "FieldProblem",
    "FieldSpec",
    "Problem",
    "agent_files",
    "agent_path",
    "default_agent",
    "ensure_default_agent",
    "load_agent",
    "load_agents",
    "load_settings",
    "parse_agent_text",
    "render_agent",
    "save_agent",
    "update_settings",
]
