"""What an agent's settings take from the window before the conversation gets any.

Two facts the session needs when it builds the ladder, kept apart so the CLI's probes and the
tests can ask them without a session: how much of the window an engine sets aside for the
answer, and what to tell a user whose fixed prefix leaves no room to work.
"""

from __future__ import annotations

import math

from engine.config import AgentConfig
from engine.context.constants import FIXED_PREFIX_MAX_RATIO
from engine.providers.base import Provider

# Engines that reject prompt + max_tokens > the window (engines.md): llama-server, Ollama
# and the embedded engine stop the answer at the window instead.
RESERVES_OUTPUT = frozenset({"vllm", "sglang"})

_PIN_HOW = {
    "ollama": "set num_ctx in the agent (Ollama loads the model with it)",
    "llamacpp": "start llama-server with a larger -c (per slot: -c ÷ --parallel)",
    "vllm": "start vLLM with a larger --max-model-len",
    "sglang": "start SGLang with a larger --context-length",
    "embedded": "set num_ctx in the agent",
}


def output_reserve(agent: AgentConfig, provider: Provider | None) -> int:
    """The answer's room the engine adds to the prompt before checking the window: the
    agent's max_tokens on vLLM and SGLang, else 0."""
    kind = provider.kind if provider is not None else agent.provider
    if kind in RESERVES_OUTPUT and agent.max_tokens:
        return agent.max_tokens
    return 0


def pin_advice(fixed_tokens: int, window: int, provider: str) -> str:
    """The notice for a window the fixed prefix leaves too little of, with the window to pin:
    the smallest multiple of 1,024 the prefix takes at most 40% of."""
    needed = math.ceil(fixed_tokens / FIXED_PREFIX_MAX_RATIO / 1024) * 1024
    how = _PIN_HOW.get(provider, "give the engine a larger context window")
    return (
        f"The system prompt and tool schemas take {fixed_tokens:,} of the {window:,}-token "
        f"window ({100 * fixed_tokens / window:.0f}%), even with compact tool descriptions: "
        f"too little is left for the conversation. Pin a window of at least {needed:,} "
        f"tokens ({how}), or shorten the agent's system prompt."
    )
