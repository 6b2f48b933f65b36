"""What Brim does when llama-server's shared KV pool runs dry under its request.

llama-server started without `--parallel` runs four slots over one unified KV pool of the
whole `-c`; each slot reports that whole size as its window. When the requests in flight
*together* outgrow the pool, the server fails every one of them at once ("Context size has
been exceeded.", tools/server/server-context.cpp), though each alone fits. Another client of
the same server is the usual cause (Brim's own requests to one server go one at a time,
engine/providers/server_gate.py), and it drains: so the request is sent again after a short
backoff. Compacting at once would cost the history for what is usually a moment's wait, so
at first it happens only when Brim's own request alone (prompt plus the room asked for the
answer) is more than the pool holds. But a client that keeps the pool busy does not drain:
once the backoff is spent and Brim's request takes more than half the pool, the
conversation compacts to leave the others room (`PoolContended`), and the backoff starts
again; only a request already within half the pool gives up. The user hears once per
conversation why a turn may wait.
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

# Under steady contention Brim's request keeps to this share of the pool, leaving the rest
# to the other requests in flight.
POOL_SHARE = 0.5


class PoolContended(KvPoolFull):
    """The backoff was spent while other requests kept the shared pool full, and this request
    takes more than its share: the conversation should shrink by `excess` tokens (the
    request's `needed` against the `share` it may take) before it is sent again."""

    def __init__(self, message: str, *, status: int | None, needed: int, share: int) -> None:
        super().__init__(message, status=status)
        self.needed = needed
        self.share = share

    @property
    def excess(self) -> int:
        return max(0, self.needed - self.share)


async def retried_while_pool_full(
    attempt: Callable[[], Awaitable[T]],
    *,
    backoff: tuple[float, ...] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """`attempt()`'s answer, sent again after each pause of `backoff` while the shared pool
    is full; KvPoolFull once it is spent. For the requests beside the agent's own (a
    checkpoint's summary), which the pool fails the same way."""
    for pause in POOL_BACKOFF_S if backoff is None else backoff:
        try:
            return await attempt()
        except KvPoolFull:
            log.info("shared KV pool full under a summary; again in %.1f s", pause)
            await sleep(pause)
    return await attempt()


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


def pool_shrink_text(exc: PoolContended) -> str:
    return (
        f"{exc.message}. Other requests kept llama-server's shared KV pool full, and this "
        "conversation could not shrink further to leave them room; press Retry when the "
        "server is less busy, or start llama-server with --parallel 1 (or a larger -c)."
    )


def keep_partial(
    conversation: Conversation, text: str, exc: BaseException, *, reasoning: str = ""
) -> None:
    """An answer the engine or the user cut short is saved, marked partial (with what the
    model reasoned before it, apart); one the shared pool cut waits on the exception, kept
    only if no retry replaces it. Reasoning alone, with no answer text, is not an answer."""
    kept = assistant(text, reasoning=reasoning).with_meta(partial=True) if text else None
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
        and `needed` alone is more than `pool`; once the backoff is spent, PoolContended
        while `needed` is more than its share of the pool, else KvPoolFull."""
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
                    share = int(pool * POOL_SHARE)
                    if needed > share:
                        # the pool does not drain: shrink to leave the others room, try anew
                        raise PoolContended(
                            exc.message, status=exc.status, needed=needed, share=share
                        ) from exc
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
