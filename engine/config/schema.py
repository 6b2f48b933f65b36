"""Every agent setting, described once as data.

The loader, the validator, the default agent file and the editor dialog all read this one
list, so a setting cannot be valid in the editor and rejected on load, or documented in the
template with a default the loader does not use. Adding a setting means adding a `FieldSpec`
(engine/config/field_spec.py) here and the matching attribute on `AgentConfig` (a test
keeps the two in step).

A field's `key` is its place in the TOML file: most are top-level keys, the run budget lives
in a `[budget]` table (`[budget] max_tokens = 128000`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from engine.config.field_spec import MAX_WINDOW, FieldSpec
from engine.config.sampling_fields import sampling_fields
from engine.providers.base import PROVIDER_KINDS
from engine.resources import prompt

FLASH_ATTN_MODES = ("auto", "on", "off")
KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")  # the types engine/fit/kv.py counts
# What Brim does when the pin does not stay on the GPU (engine/window/fit_policy.py).
SPILL_POLICIES = ("warn", "shrink", "ask")
# Whether a thinking model reasons: "default" leaves it to the model and its engine; the
# others are mapped to each engine by its provider (ChatOptions.reasoning).
REASONING_CHOICES = ("default", "off", "on", "low", "medium", "high")

# The agent's own instructions unless its file says otherwise (resources/prompts/system.txt).
DEFAULT_SYSTEM_PROMPT = prompt("system")


def quantized_cache_problem(kv_type: str) -> str:
    """Why a quantized KV cache is refused with flash attention off (llama.cpp quantizes the
    V cache only inside its flash-attention kernels)."""
    return (
        f"{kv_type} quantizes the V cache, which llama.cpp does only with flash attention: "
        'set flash_attn to "auto" or "on", or kv_cache_type to "f16"'
    )


AGENT_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec(
        "name",
        "str",
        default=None,
        required=True,
        label="Name",
        description="What the agent is called in Brim and in `brim chat --agent NAME`.",
    ),
    FieldSpec(
        "provider",
        "choice",
        default="embedded",
        choices=PROVIDER_KINDS,
        group="engine",
        label="Engine",
        description="The engine that runs the model (embedded runs it inside Brim).",
    ),
    FieldSpec(
        "base_url",
        "url",
        default=None,
        nullable=True,
        unset="the engine's usual local address",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="Base URL",
        example="http://127.0.0.1:11434",
        description="Where the engine listens.",
    ),
    FieldSpec(
        "api_key_env",
        "str",
        default=None,
        nullable=True,
        unset="no key from the environment",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="API key variable",
        example="BRIM_VLLM_KEY",
        description=(
            "The environment variable that holds the engine's API key (a server started "
            "with --api-key); sent as Authorization: Bearer, never written anywhere."
        ),
    ),
    FieldSpec(
        "api_key",
        "secret",
        default=None,
        nullable=True,
        unset="no key",
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="API key",
        description=(
            "The engine's API key itself, sent as Authorization: Bearer. Prefer api_key_env: "
            "a key here lives in this file in plain text."
        ),
    ),
    FieldSpec(
        "request_timeout_s",
        "float",
        default=None,
        nullable=True,
        unset="600 seconds (a big model may think for minutes before its first token)",
        minimum=0.1,
        maximum=86400.0,
        providers=("ollama", "llamacpp", "vllm", "sglang"),
        group="engine",
        label="Request timeout (s)",
        example=600.0,
        description="How long to wait for the engine's next bytes before calling it hung.",
    ),
    FieldSpec(
        "model",
        "str",
        default="",
        group="engine",
        label="Model",
        description=(
            "The model to run: a model name for servers, a GGUF file path for the embedded "
            "engine (empty: the default model for embedded, the only served model for a "
            "server that serves one)."
        ),
    ),
    FieldSpec(
        "n_threads",
        "int",
        default=None,
        nullable=True,
        unset="chosen by llama.cpp",
        minimum=1,
        maximum=1024,
        providers=("embedded",),
        group="engine",
        label="CPU threads",
        example=4,
        description="Threads the embedded engine uses.",
    ),
    FieldSpec(
        "gpu_layers",
        "int",
        default=None,
        nullable=True,
        unset="all layers when the installed llama.cpp can offload, else 0",
        minimum=0,
        maximum=100_000,
        providers=("embedded",),
        group="engine",
        label="GPU layers",
        example=99,
        description=(
            "Layers the embedded engine puts on the GPU (more than the model has: all of "
            "them, the output head too). 0 keeps it on the CPU."
        ),
    ),
    FieldSpec(
        "flash_attn",
        "choice",
        default="auto",
        choices=FLASH_ATTN_MODES,
        providers=("embedded",),
        group="engine",
        label="Flash attention",
        description=(
            "Flash attention for the embedded engine: auto (on, where llama.cpp has it), on "
            "or off. A quantized KV cache needs it."
        ),
    ),
    FieldSpec(
        "kv_cache_type",
        "choice",
        default="f16",
        choices=KV_CACHE_TYPES,
        providers=("embedded",),
        group="engine",
        label="KV cache type",
        description=(
            "How the embedded engine stores its KV cache: f16, q8_0 (about half the memory) "
            "or q4_0 (about a quarter). The quantized types need flash attention."
        ),
    ),
    FieldSpec(
        "num_ctx",
        "int",
        default=None,
        nullable=True,
        unset="the window the engine reports",
        minimum=256,
        maximum=MAX_WINDOW,
        group="window",
        label="Context window pin (num_ctx)",
        example=8192,
        description=(
            "Pin the context window. Ollama receives it on every request; for the other "
            "engines it is what Brim accounts against (never above what the engine serves)."
        ),
    ),
    FieldSpec(
        "on_spill",
        "choice",
        default="warn",
        choices=SPILL_POLICIES,
        group="window",
        label="When the pin spills off the GPU",
        description=(
            "What Brim does when the engine puts part of the model on the CPU at the pin: "
            "warn (keep the pin and say what spilled), shrink (lower the pin to the largest "
            "window that stays on the GPU, and say so) or ask (offer both in the "
            "conversation; headless: an event, then warn)."
        ),
    ),
    FieldSpec(
        "max_context_tokens",
        "int",
        default=None,
        nullable=True,
        unset="no ceiling",
        minimum=256,
        maximum=MAX_WINDOW,
        group="window",
        label="Context ceiling",
        example=32768,
        description="A ceiling on the window Brim uses; it only ever lowers it.",
    ),
    FieldSpec(
        "summarizer_model",
        "str",
        default=None,
        nullable=True,
        unset="the agent's own model",
        group="compaction",
        label="Summarizer model",
        example="qwen2.5:3b",
        description="The model that writes compaction summaries.",
    ),
    FieldSpec(
        "compaction_ratio",
        "float",
        default=0.8,
        minimum=0.1,
        maximum=0.99,
        group="compaction",
        label="Compaction ratio",
        description="Compact when a request would fill this share of the window.",
    ),
    FieldSpec(
        "compaction_reserve_tokens",
        "int",
        default=None,
        nullable=True,
        unset="use compaction_ratio",
        minimum=1,
        maximum=MAX_WINDOW,
        group="compaction",
        label="Compaction reserve (tokens)",
        example=16384,
        description="Compact when fewer than this many tokens are left; wins over the ratio.",
    ),
    FieldSpec(
        "max_iterations",
        "int",
        default=None,
        nullable=True,
        unset="no cap",
        minimum=1,
        maximum=100_000,
        group="run",
        label="Iteration cap",
        example=50,
        description="The most model calls one run may make before it stops.",
    ),
    FieldSpec(
        "max_tokens",
        "int",
        default=None,
        nullable=True,
        unset=(
            "a quarter of the context window, at least 512 and at most 4096 tokens (1024 on a "
            "4096-token window)"
        ),
        minimum=0,
        maximum=MAX_WINDOW,
        group="run",
        label="Output cap (tokens)",
        example=4096,
        description=(
            "The most tokens the model may generate in one response; an answer cut there is "
            "marked, and 'continue' gets the rest. 0: no cap but the room the window has left."
        ),
    ),
    FieldSpec(
        "reasoning",
        "choice",
        default="default",
        choices=REASONING_CHOICES,
        group="run",
        label="Reasoning",
        description=(
            "Whether a thinking model reasons before it answers: default (as the model and "
            "its engine do), off, on, or low / medium / high effort where the model takes "
            "it. Its thinking counts against the output cap and is shown folded, apart from "
            "the answer."
        ),
    ),
    *sampling_fields(),  # temperature, top_p, top_k, min_p, repeat_penalty, seed
    FieldSpec(
        "budget_max_tokens",
        "int",
        default=None,
        nullable=True,
        key=("budget", "max_tokens"),
        unset="no cap",
        minimum=0,
        maximum=1_000_000_000,
        group="run",
        label="Run token budget",
        example=128000,
        description=(
            "Token-spend ceiling per run, counted as the engine's new work: prompt tokens not "
            "served from its cache, plus the answer. Unset or 0: no cap."
        ),
    ),
    FieldSpec(
        "system_prompt",
        "text",
        default=DEFAULT_SYSTEM_PROMPT,
        group="prompt",
        label="System prompt",
        description="The agent's own instructions, first in every conversation.",
    ),
    FieldSpec(
        "mcp",
        "mcp",
        default=(),
        group="tools",
        label="MCP servers",
        description=(
            "Model Context Protocol servers whose tools the agent may call: [[mcp]] tables "
            "with a name and a command (stdio) or a url (streamable HTTP); see the README."
        ),
    ),
)

FIELDS_BY_NAME: Mapping[str, FieldSpec] = MappingProxyType({f.name: f for f in AGENT_FIELDS})
FIELDS_BY_KEY: Mapping[tuple[str, ...], FieldSpec] = MappingProxyType(
    {f.path: f for f in AGENT_FIELDS}
)
TABLES: frozenset[str] = frozenset(f.path[0] for f in AGENT_FIELDS if len(f.path) > 1)
