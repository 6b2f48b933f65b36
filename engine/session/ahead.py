"""Compaction while the user reads: done after an answer, not at the user's next Enter.

A compaction at the start of a turn makes the user wait for the memory extraction, the
checkpoint request and the rebuilt prompt's evaluation before the first token: 49-56 s
against about 1 s for an ordinary turn on the bundled model. So when an answer lands and
the next turn would cross the compaction trigger (the history now plus a message as long
as the user's recent ones), the session compacts right away, in the background, through
the ladder's own path, then has the engine evaluate the rebuilt prompt (`Provider.warm`),
so the next turn finds it cached and costs what an ordinary one does.

A turn sent while this runs waits for it (it would compact anyway); a cancel, a switch of
conversation, `/compact` or the session's close stop it first. A compaction stopped midway
changes nothing: the history is replaced only once the checkpoint is whole.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from engine.agent.loop import AgentLoop
from engine.context.constants import REASON_PREFLIGHT
from engine.events import Event, StateEvent
from engine.messages import Message, alternating, model_messages
from engine.providers.base import ChatOptions
from engine.providers.errors import ProviderError

log = logging.getLogger(__name__)

# The next message is expected to be as long as the longest of the user's last few.
RECENT_USER_MESSAGES = 3


def expected_next_tokens(history: Sequence[Message], count: Callable[[Message], int]) -> int:
    """The tokens a next user message is likely to take: the longest of the last
    `RECENT_USER_MESSAGES` the user wrote (0 before the first)."""
    recent = [m for m in history if m.role == "user" and m.kind == "chat"]
    return max((count(m) for m in recent[-RECENT_USER_MESSAGES:]), default=0)


def answered(history: Sequence[Message]) -> bool:
    """The conversation ends with a finished answer (not a tool step, not a user message)."""
    sent = model_messages(list(history))
    last = sent[-1] if sent else None
    return (
        last is not None
        and last.role == "assistant"
        and not last.tool_calls
        and not last.meta_value("partial")
    )


def due_ahead(loop: AgentLoop) -> bool:
    """Whether the next turn, with a message like the user's recent ones, would compact."""
    live = loop.conversation.live()
    if not answered(live) or loop.context.summarize is None:
        return False
    usage = loop.context.usage(model_messages(live), loop.overhead_tokens())
    expected = expected_next_tokens(live, loop.counter.count_message)
    return usage.used + expected >= loop.context.budget.compact_threshold


async def warm(loop: AgentLoop) -> None:
    """Have the engine evaluate the history as the next request will start (its tools and
    sampling included, so the cached prefix matches). Best effort: a failure is logged."""
    schemas = loop.tools.schemas() if loop.tools is not None else []
    options = ChatOptions(
        max_tokens=1, sampling=loop.agent.sampling, tools=schemas, reasoning=loop.reasoning
    )
    request = alternating(model_messages(loop.conversation.live()))  # as the wire joins it
    try:
        await loop.provider.warm(loop.agent.model, request, options)
    except ProviderError as exc:
        log.info("the engine did not pre-warm the compacted prompt: %s", exc)


class CompactionAhead:
    """The session's one background compaction (at most one at a time)."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start_if_due(self, loop: AgentLoop | None) -> bool:
        """After an answer: compact now in the background when the next turn would."""
        if loop is None or self.running or not due_ahead(loop):
            return False
        self._task = asyncio.create_task(self._run(loop))
        return True

    async def _run(self, loop: AgentLoop) -> None:
        try:
            outcome = await loop.compact_outcome(REASON_PREFLIGHT)
            if outcome.compaction is not None and outcome.compaction.ok:
                await warm(loop)
        except Exception:  # the next turn's ladder tries again, and says what fails
            log.warning("compaction ahead of the next turn failed", exc_info=True)
        finally:
            self._emit(StateEvent("ready"))

    async def settle(self) -> None:
        """Wait for a running compaction (a turn sent meanwhile starts after it)."""
        task = self._task
        if task is not None:
            await asyncio.wait({task})  # its own failure or cancel is not the caller's
            if self._task is task:
                self._task = None

    def cancel(self) -> None:
        """Esc while it runs: stop it (the history stays as it was)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def stop(self) -> None:
        """Stop a running compaction and wait until it has (nothing it did is kept)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
