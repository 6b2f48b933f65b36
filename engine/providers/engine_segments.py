"""Exact per-message counts through an engine's own endpoints (llama-server, vLLM).

Asking the engine to count the whole request before every send would re-tokenize the
conversation each time. Instead each message is counted once, as the engine's chat template
frames it: the tokens the template adds for the message after a small neutral prefix,

    segment(m) = count(prefix + [m]) - count(prefix)

where count() is the engine's own count of a chat (`Provider.count_prompt`: llama-server
renders `/apply-template` and `/tokenize`s the result, vLLM `/tokenize`s the messages). The
prefix counts are measured once. For templates whose messages begin and end at special tokens
(ChatML and most others) a request then costs the sum of its segments plus a fixed framing
(the generation prompt, a BOS), also measured once; whatever a template does across message
boundaries is left to the counter's calibration (the framing residual). An assistant
message is measured with a user message after it (llama-server renders a final assistant
message as a prefill to continue, without its end of turn).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from engine.messages import Message, system, user
from engine.providers.gguf_tokenizer import _ANCHOR, _PREFIXES

# The engine's count of a chat (messages, tool schemas), or None when it cannot say.
CountChat = Callable[[list[Message], list[dict[str, Any]]], Awaitable[int | None]]

_TOOLS_PROBE = (system(_ANCHOR), user(_ANCHOR))


def tools_key(tools: list[dict[str, Any]]) -> str:
    """One key for a whole list of schemas: a template's tools block has its own preamble,
    so the list, not each schema, is what costs a fixed number of tokens."""
    text = json.dumps(tools, ensure_ascii=False, sort_keys=True)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class EngineSegments:
    """Counts messages, tool schemas and framing through one engine, one call per new item.

    `engine` names the engine and its endpoints for the user ("llama-server /tokenize of each
    message as /apply-template frames it"). Every method answers None when the engine could
    not count; the caller then estimates and says so."""

    def __init__(self, count_chat: CountChat, engine: str) -> None:
        self._count_chat = count_chat
        self.engine = engine
        self._counts: dict[tuple[Message, ...], int | None] = {}
        self.calls = 0  # chats the engine was asked to count, for tests and benches

    async def _count(
        self, messages: tuple[Message, ...], tools: list[dict[str, Any]] | None = None
    ) -> int | None:
        if tools:
            self.calls += 1
            return await self._count_chat(list(messages), tools)
        if messages not in self._counts:
            self.calls += 1
            self._counts[messages] = await self._count_chat(list(messages), [])
        return self._counts[messages]

    async def _after_assistant(self, message: Message) -> int | None:
        """An assistant message never goes last: llama-server takes a final assistant message
        for a prefill to continue (no end-of-turn, no generation prompt), which would count it
        short. It is measured between the neutral prefix and a trailing user message, less
        what that user message costs (a user segment, measured after the system prefix)."""
        prefix = _TOOLS_PROBE  # system, user
        base = await self._count(prefix)
        alone = await self._count(prefix[:1])
        trailer = user(_ANCHOR)
        self.calls += 1
        after = await self._count_chat([*prefix, message, trailer], [])
        if base is None or alone is None or after is None:
            return None
        user_segment = base - alone
        return after - base - user_segment if after - base >= user_segment else None

    async def _prefix_count(self, prefix: tuple[Message, ...]) -> int | None:
        """The engine's count of a neutral prefix as it stands before another message: one
        that ends with an assistant message is not asked alone (it would be a prefill)."""
        if prefix[-1].role != "assistant":
            return await self._count(prefix)
        if prefix not in self._counts:
            head = await self._count(prefix[:-1])
            last = await self._after_assistant(prefix[-1])
            self._counts[prefix] = None if head is None or last is None else head + last
        return self._counts[prefix]

    async def count_message(self, message: Message) -> int | None:
        """The tokens the template spends on `message` (its content and its framing)."""
        if message.role == "assistant":
            counted = await self._after_assistant(message)
            if counted is not None:
                return counted
        for prefix in _PREFIXES.get(message.role, _PREFIXES["user"]):
            before = await self._prefix_count(prefix)
            if before is None:
                continue
            self.calls += 1
            after = await self._count_chat([*prefix, message], [])
            if after is not None and after >= before:
                return after - before
        return None

    async def request_overhead(self) -> int | None:
        """What a request costs beyond its messages' segments: the generation prompt, a BOS,
        whatever the template puts around the conversation."""
        probe = system(_ANCHOR)
        whole = await self._count((probe,))
        segment = await self.count_message(probe)
        if whole is None or segment is None:
            return None
        return max(0, whole - segment)

    async def count_tools(self, tools: list[dict[str, Any]]) -> int | None:
        """What these schemas add to a request as the engine renders them (0 where its
        template ignores tools)."""
        if not tools:
            return 0
        bare = await self._count(_TOOLS_PROBE)
        with_tools = await self._count(_TOOLS_PROBE, tools)
        if bare is None or with_tools is None:
            return None
        return max(0, with_tools - bare)
