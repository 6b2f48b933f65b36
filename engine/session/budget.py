"""What an agent's settings and its fixed prefix take from the window before the
conversation gets any.

The facts the session needs when it builds the ladder and before it sends a message, kept
apart so the CLI's probes and the tests can ask them without a session: how much of the
window an engine sets aside for the answer, whether the tool schemas must go compact (and
what to tell a user whose fixed prefix leaves no room to work), and whether a message can
fit the window at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from engine.agent.loop import AgentLoop
from engine.config import AgentConfig
from engine.context.constants import FIXED_PREFIX_MAX_RATIO, FIXED_PREFIX_UNWORKABLE_RATIO
from engine.context.history import is_fixed
from engine.context.work_state import CountText
from engine.events import ErrorEvent
from engine.messages import Message, alternating, model_messages, user
from engine.providers.base import Provider
from engine.session.conversation import Conversation
from engine.tokens import TokenCounter

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


class CompactableTools(Protocol):
    """A tool runner that can advertise its tools with compact descriptions, or again in full."""

    def schemas(self) -> list[dict[str, Any]]: ...

    def use_compact_schemas(self) -> None: ...

    def use_full_schemas(self) -> None: ...


def fit_tool_schemas(
    runner: CompactableTools,
    counter: TokenCounter,
    messages: list[Message],
    *,
    space: int,
    window: int,
    provider: str,
) -> str | None:
    """Decided when the loop is wired and again when the engine reveals another window (the
    schemas are otherwise a stable prefix): where the full tool schemas would make the fixed
    prefix (system prompt, schemas, framing) more than 40% of `space` (the window less the
    output reserve), the tools go compact; where even those leave too little room, returns
    the notice that says what window to pin (else None)."""

    def prefix() -> int:
        schemas = runner.schemas()
        system_tokens = sum(
            counter.count_message(m) for m in model_messages(messages)[:1] if m.role == "system"
        )
        # Counted as text (a real BPE where the engine counts remotely): JSON runs more
        # tokens per character than the conversation a ratio was learned from.
        tools = counter.count_text(json.dumps(schemas, ensure_ascii=False))
        return system_tokens + tools + counter.request_overhead(bool(schemas))

    runner.use_full_schemas()
    if prefix() <= FIXED_PREFIX_MAX_RATIO * space:
        return None
    runner.use_compact_schemas()
    fixed = prefix()
    if fixed <= FIXED_PREFIX_UNWORKABLE_RATIO * space:
        return None
    return pin_advice(fixed, window, provider)


def oversized_message(
    text: str,
    messages: list[Message],
    *,
    counter: TokenCounter,
    schemas: list[dict[str, Any]],
    window: int,
) -> ErrorEvent | None:
    """The refusal of a message that cannot fit the window even alone (with only what every
    request carries: the system prompt, the checkpoint, pinned messages, the tools), or None
    when it may be sent: no compaction could make room for it."""
    fixed = [m for m in model_messages(messages) if is_fixed(m)]
    message = user(text)
    total = counter.count_request(alternating([*fixed, message]), schemas)
    own = counter.count_message(message)
    # Counted exactly, the whole request decides. Estimated (a learned ratio, which can
    # be far off on tool schemas before the first answer), only a message that alone
    # outgrows the window is refused: an ordinary message must never be.
    if total <= window or (not counter.estimate_is_exact and own <= window):
        return None
    return ErrorEvent(
        "message_too_large",
        f"This message is about {own:,} tokens; with {_carried_parts(fixed, schemas)} "
        f"({total - own:,} tokens) it needs {total:,}, more than the whole {window:,}-token "
        f"window. Nothing was sent or compacted: {_what_to_do(bool(schemas))}.",
        data={"tokens": total, "message_tokens": own, "window": window},
    )


def _carried_parts(fixed: list[Message], schemas: list[dict[str, Any]]) -> str:
    """What every request carries besides the message, named as it is: the tool schemas
    only where the request has tools, the checkpoint only where there is one."""
    kinds = {"system" if m.role == "system" and m.kind == "chat" else m.kind for m in fixed}
    parts = []
    if "system" in kinds:
        parts.append("the system prompt")
    if kinds & {"summary", "continuation"}:
        parts.append("the summary of earlier messages")
    if kinds & {"pinned", "task"}:
        parts.append("the pinned messages")
    if schemas:
        parts.append("the tool descriptions")
    if not parts:
        return "what every request carries"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _what_to_do(tools: bool) -> str:
    """The ways out, only those the agent offers: a file to read needs tools."""
    if tools:
        return "shorten it, send it in parts, or give the agent a file to read instead"
    return "shorten it or send it in parts"


def oversized_for_loop(text: str, messages: list[Message], loop: AgentLoop) -> ErrorEvent | None:
    """`oversized_message` against what `loop` sends: its counter, its tools, its window."""
    schemas = loop.tools.schemas() if loop.tools is not None else []
    window = loop.context.budget.window
    return oversized_message(text, messages, counter=loop.counter, schemas=schemas, window=window)


async def counted_journal_room(
    loop: AgentLoop, messages: list[Message]
) -> Callable[[], Awaitable[int]]:
    """The history counted through the engine first, where it counts: an opened
    conversation's first report then counts as the live one did once its requests had
    primed the counter, not by the estimate the counter falls back to for what it has not
    seen (a compacted conversation read 7.2K on reopen where it had read 6.9K live). Returns
    the resumed journal preamble's budget beside that history (engine/context/budget.py),
    sized from what will be sent."""
    history = model_messages(messages)
    schemas = loop.tools.schemas() if loop.tools is not None else []
    await loop.counter.prime(history, schemas, within=2 * loop.context.budget.window)

    async def room() -> int:
        used = loop.context.usage(history, loop.overhead_tokens()).used
        return loop.context.budget.journal_tokens(used)

    return room


async def fold_in_journal(
    loop: AgentLoop, conversation: Conversation, count_text: CountText
) -> None:
    """A resumed conversation's journal, sized from the window and the history it joins
    (counted as live first), worded for whether `loop` sends tools."""
    room = await counted_journal_room(loop, conversation.messages)
    await conversation.fold_in_journal(room, count_text, tools=loop.tools is not None)
