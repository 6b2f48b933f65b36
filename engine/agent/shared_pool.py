"""What Brim does when llama-server's shared KV pool runs dry under its request.

llama-server started without `--parallel` runs four slots over one unified KV pool of the
whole `-c`; each slot reports that whole size as its window. When the requests in flight
*together* outgrow the pool, the server fails every one of them at once ("Context size has
been exceeded.", tools/server/server-context.cpp), though each alone fits. Another client of
the same server is the usual cause (Brim's own requests to one server go one at a time,
engine/providers/server_gate.py), and it drains: so the request is sent again after a short
backoff. Compacting would not help and would cost the history, so it happens only when
Brim's own request alone (prompt plus the room asked for the answer) is more than the pool
holds. The user hears once per conversation why a turn may wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from engine.agent.types import Conversation
from engine.events import NOTICE_SHARED_POOL, NoticeKind
from engine.messages import Message, assistant
from engine.providers.errors import ContextOverflow, KvPoolFull

log = logging.getLogger(__name__)

T = TypeVar("T")

# Seconds to wait before each new try: another client's answer usually ends within these.
POOL_BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)

Mark = Callable[[NoticeKind, str, dict[str, int | str]], None]


def shared_pool_text(pool: int, slots: int | None) -> str:
    who = f"its {slots} slots" if slots and slots > 1 else "its slots"
    return (
        f"llama-server ran out of the KV cache {who} share: they draw on one pool of "
        f"{pool:,} tokens (llama-server's default when started without --parallel), and the "
        "requests in flight together outgrew it, though this one alone fits. Another client "
        "may be using the same server. Brim waits and sends the request again, and never "
        "sends two of its own at once; start llama-server with --parallel 1 (or -np N "
        "without --kv-unified) for a window no other request can take."
    )


def pool_gave_up_text(exc: KvPoolFull, tries: int) -> str:
    return (
        f"{exc.message}. Brim sent the request {tries} times while other requests kept the "
        "shared pool full; press Retry when the server is less busy, or start llama-server "
        "with --parallel 1 (or a larger -c)."
    )


def keep_partial(conversation: Conversation, text: str, exc: BaseException) -> None:
    """An answer the engine or the user cut short is saved, marked partial; one the shared
    pool cut waits on the exception, kept only if no retry replaces it."""
    kept = assistant(text).with_meta(partial=True) if text else None
    if isinstance(exc, KvPoolFull):
        exc.partial = kept
    elif kept is not None:
        conversation.append(kept)


class SharedPoolWatch:
    """Runs one request of the agent loop, retrying it while the shared pool is full.

    `mark(kind, text, details)` tells a notice with its data (once: not when the
    conversation holds it already); an answer cut short by the last failure is kept in the
    `conversation` when no retry replaces it."""

    def __init__(
        self,
        *,
        mark: Mark,
        conversation: Conversation,
        backoff: tuple[float, ...] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._mark = mark
        self._conversation = conversation
        self._backoff = backoff
        self._sleep = sleep
        self._said = False

    async def run(
        self, attempt: Callable[[], Awaitable[T]], *, needed: int, pool: int, slots: int | None
    ) -> T:
        """`attempt()`'s answer. ContextOverflow (the ladder compacts) when the pool ran dry
        and `needed` alone is more than `pool`; KvPoolFull again once the backoff is spent."""
        backoff = self._backoff if self._backoff is not None else POOL_BACKOFF_S
        tries = 0
        while True:
            tries += 1
            try:
                return await attempt()
            except KvPoolFull as exc:
                if needed > pool:
                    raise ContextOverflow(
                        f"{exc.message}; this request alone asks for {needed:,} of the "
                        f"{pool:,} tokens it holds",
                        status=exc.status,
                        prompt_tokens=needed,
                        window=pool,
                    ) from exc
                if tries > len(backoff):
                    if isinstance(exc.partial, Message):
                        self._conversation.append(exc.partial)
                    raise KvPoolFull(pool_gave_up_text(exc, tries), status=exc.status) from exc
                self._tell(pool, slots, needed, len(backoff))
                log.info(
                    "shared KV pool full; try %d again in %.1f s", tries + 1, backoff[tries - 1]
                )
                await self._sleep(backoff[tries - 1])

    def _tell(self, pool: int, slots: int | None, needed: int, retries: int) -> None:
        if self._said or any(
            m.meta_value("notice_kind") == NOTICE_SHARED_POOL for m in self._conversation.live()
        ):
            return
        self._said = True
        details: dict[str, int | str] = {
            "pool": pool,
            "slots": slots or 0,
            "needed": needed,
            "retries": retries,
        }
        self._mark(NOTICE_SHARED_POOL, shared_pool_text(pool, slots), details)
