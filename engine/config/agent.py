"""One agent's settings as a validated, immutable value.

An `AgentConfig` cannot exist with an invalid value: construction validates every field
against the schema, so code that holds one never re-checks, and the editor gets the same
refusal (`AgentConfigError`) as the loader. Defaults come from the schema, not from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.errors import AgentConfigError, Problem
from engine.config.field_spec import FieldProblem
from engine.config.mcp_servers import McpServer
from engine.config.schema import AGENT_FIELDS, FIELDS_BY_NAME, quantized_cache_problem
from engine.providers.base import DEFAULT_BASE_URLS
from engine.providers.sampling import Sampling


def _default(name: str) -> Any:
    return field(default=FIELDS_BY_NAME[name].default)


@dataclass(frozen=True)
class AgentConfig:
    name: str
    provider: str = _default("provider")
    base_url: str | None = _default("base_url")
    api_key_env: str | None = _default("api_key_env")
    # Never shown in a repr (a log line, a traceback's locals): see engine/config/credentials.
    api_key: str | None = field(default=FIELDS_BY_NAME["api_key"].default, repr=False)
    request_timeout_s: float | None = _default("request_timeout_s")
    model: str = _default("model")
    n_threads: int | None = _default("n_threads")
    gpu_layers: int | None = _default("gpu_layers")
    flash_attn: str = _default("flash_attn")
    kv_cache_type: str = _default("kv_cache_type")
    num_ctx: int | None = _default("num_ctx")
    on_spill: str = _default("on_spill")
    max_context_tokens: int | None = _default("max_context_tokens")
    summarizer_model: str | None = _default("summarizer_model")
    compaction_ratio: float = _default("compaction_ratio")
    compaction_reserve_tokens: int | None = _default("compaction_reserve_tokens")
    max_iterations: int | None = _default("max_iterations")
    max_tokens: int | None = _default("max_tokens")
    reasoning: str = _default("reasoning")
    temperature: float | None = _default("temperature")
    top_p: float | None = _default("top_p")
    top_k: int | None = _default("top_k")
    min_p: float | None = _default("min_p")
    repeat_penalty: float | None = _default("repeat_penalty")
    seed: int | None = _default("seed")
    budget_max_tokens: int | None = _default("budget_max_tokens")
    system_prompt: str = _default("system_prompt")
    mcp: tuple[McpServer, ...] = _default("mcp")
    # Where it was loaded from, and the file's state then (for conflict detection on save).
    source_path: Path | None = field(default=None, compare=False)
    loaded_mtime_ns: int | None = field(default=None, compare=False)
    loaded_digest: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        for spec in AGENT_FIELDS:
            try:
                value = spec.validate(getattr(self, spec.name))
            except FieldProblem as exc:
                problems.append(Problem(spec.toml_key, str(exc)))
                continue
            object.__setattr__(self, spec.name, value)
        if self.kv_cache_type != "f16" and self.flash_attn == "off":
            problems.append(Problem("kv_cache_type", quantized_cache_problem(self.kv_cache_type)))
        if self.api_key is not None and self.api_key_env is not None:
            problems.append(
                Problem("api_key", "set api_key or api_key_env, not both (api_key_env is safer)")
            )
        if problems:
            raise AgentConfigError(self.source_path or f"agent '{self.name}'", problems)

    @classmethod
    def from_values(cls, values: dict[str, Any], **file_state: Any) -> AgentConfig:
        """Build from schema field names (what the loader and the editor collect)."""
        unknown = sorted(set(values) - set(FIELDS_BY_NAME))
        if unknown:
            raise AgentConfigError(
                file_state.get("source_path") or "agent",
                [Problem(k, "unknown setting") for k in unknown],
            )
        if "name" not in values:
            raise AgentConfigError(
                file_state.get("source_path") or "agent",
                [Problem("name", "missing: every agent needs a name")],
            )
        return cls(**values, **file_state)

    def values(self) -> dict[str, Any]:
        """Every setting by schema field name (file state excluded)."""
        return {spec.name: getattr(self, spec.name) for spec in AGENT_FIELDS}

    def with_changes(self, **changes: Any) -> AgentConfig:
        """A copy with some settings changed, validated like any other (the editor's path)."""
        unknown = sorted(set(changes) - set(FIELDS_BY_NAME))
        if unknown:
            raise AgentConfigError(
                self.source_path or f"agent '{self.name}'",
                [Problem(k, "unknown setting") for k in unknown],
            )
        return dataclasses.replace(self, **changes)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> AgentConfig:
        """`with_changes` under pydantic's name, for callers written against either."""
        return self.with_changes(**(update or {}))

    @property
    def sampling(self) -> Sampling:
        """The sampler settings this agent sets (None: left to the model; which ones a
        request then carries is engine/providers/sampling_source.py's rule)."""
        return Sampling(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            min_p=self.min_p,
            repeat_penalty=self.repeat_penalty,
            seed=self.seed,
        )

    @property
    def effective_base_url(self) -> str | None:
        """The URL to talk to: the configured one, else the engine's usual local address
        (None for the embedded engine, which has no URL)."""
        if self.provider == "embedded":
            return None
        return (self.base_url or DEFAULT_BASE_URLS.get(self.provider, "")).rstrip("/") or None

    def warnings(self) -> list[str]:
        """Settings that are valid but will not do what the user may expect."""
        out: list[str] = []
        for spec in AGENT_FIELDS:
            value = getattr(self, spec.name)
            if value is not None and value != spec.default and not spec.applies_to(self.provider):
                out.append(
                    f"{spec.toml_key} applies only to {', '.join(spec.providers)}; "
                    f"ignored for {self.provider}"
                )
        reserve = self.compaction_reserve_tokens
        limits = [w for w in (self.num_ctx, self.max_context_tokens) if w is not None]
        if reserve is not None and limits and reserve >= min(limits):
            out.append(
                f"compaction_reserve_tokens ({reserve}) leaves no room in a window of "
                f"{min(limits)}; every request would compact"
            )
        return out


def default_agent() -> AgentConfig:
    """The agent a fresh install runs: the embedded engine with the bundled default model."""
    return AgentConfig(name="default", provider="embedded", model="")
