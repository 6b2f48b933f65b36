"""One turn on the session's wired loop, as a task the session's cancel reaches, and
`/compact` through the same ladder.

A turn finds the window first (probing the engine when it is still unknown), has the
summarizer and the MCP servers ready, takes one snapshot of memory, and runs the loop; a
cancel ends it quietly with a "Turn cancelled." notice kept in the conversation, and the
rail's gauge moves on to the next request once the answer (or its partial) is in. A
message that cannot fit the window even alone is refused before any of that.

A compaction running ahead of the next turn (engine/session/ahead.py) is waited for by a
turn and by `/compact`, and stopped first by a switch of conversation or the close.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from engine.agent.loop import TurnOutcome
from engine.events import ErrorEvent, EventSink, StateEvent
from engine.mcp.hub import McpHub
from engine.messages import Message, notice
from engine.providers.base import Provider
from engine.providers.errors import ProviderError
from engine.session.admission import await_quietly_cancelled
from engine.session.ahead import CompactionAhead
from engine.session.budget import oversized_for_loop
from engine.session.conversation import Conversation
from engine.session.ledger import ContextLedger
from engine.session.memory_link import MemoryLink
from engine.session.summarizer import Summarizer
from engine.session.window_desk import WindowDesk


class TurnRunner:
    """The running turn of one session, and the compactions that go through its ladder."""

    def __init__(
        self,
        conversation: Conversation,
        desk: WindowDesk,
        *,
        ledger: ContextLedger,
        provider: Callable[[], Provider | None],
        memory: Callable[[], MemoryLink],
        summarizer: Summarizer,
        mcp: McpHub,
        ahead: CompactionAhead | None,
        emit: EventSink,
        append: Callable[..., None],
    ) -> None:
        self._conversation = conversation
        self._desk = desk
        self._ledger = ledger
        self._provider = provider
        self._memory = memory
        self._summarizer = summarizer
        self._mcp = mcp
        self._ahead = ahead
        self._emit = emit
        self._append = append
        self.task: asyncio.Task[TurnOutcome | None] | None = None
        self.manual_compaction = False  # /compact runs now: the memory extraction does not

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self._ahead is not None:
            self._ahead.cancel()

    async def finished(self) -> None:
        """Wait for the turn (cancelled or not) to end."""
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def settle_ahead(self, *, stop: bool = False) -> None:
        """A compaction running ahead of this turn: waited for (`stop`: stopped first)."""
        if self._ahead is not None:
            await (self._ahead.stop() if stop else self._ahead.settle())

    def start_ahead_if_due(self) -> None:
        if self._ahead is not None:
            self._ahead.start_if_due(self._desk.loop)

    async def window_known(self) -> bool:
        """The engine's window, probed now when still unknown; False when it did not say."""
        if self._desk.window is None:
            await self._desk.resolve()
        return self._desk.window is not None

    async def run(self) -> None:
        """Run the turn as a task that `cancel()` reaches; a cancel ends it quietly."""
        self.task = asyncio.create_task(self._turn())
        try:
            await await_quietly_cancelled(self.task)
        finally:
            self.task = None

    def refuse_if_it_cannot_fit(self, text: str) -> bool:
        """A message that cannot fit the window even alone is refused (an error event, True)
        before anything is compacted, stored or sent, once the window is the engine's."""
        window = self._desk.window
        if window is None or self._provider() is None:
            return False  # the turn resolves it (and says why when it cannot)
        if window.source in ("assumed", "fallback", "observed"):
            # A guessed window (Ollama before it loads the model), or one drawn from a single
            # error, may be far smaller than what the engine serves: its answer decides.
            return False
        messages: list[Message] = self._conversation.messages
        refusal = oversized_for_loop(text, messages, self._desk.agent_loop())
        if refusal is not None:
            self._emit(refusal)
            self._emit(StateEvent("ready"))
        return refusal is not None

    async def compact(self) -> None:
        """`/compact`: compact now through the same path automatic compaction takes."""
        if not await self.window_known():
            return
        await self.settle_ahead()
        await self._summarizer.prepare()
        loop = self._desk.agent_loop()
        self.manual_compaction = True  # the chat layer cannot answer for the run's gate
        try:
            await loop.compact()
        except ProviderError as exc:
            self._emit(ErrorEvent(exc.kind, exc.message, retryable=exc.retryable))
        finally:
            self.manual_compaction = False
            self._emit(StateEvent("ready"))

    async def _turn(self) -> TurnOutcome | None:
        assert self._provider() is not None
        if not await self.window_known():
            return None
        await self._summarizer.prepare()
        if await self._mcp.prepare():  # MCP listings known, eager servers chosen
            self._desk.loop = None  # wired again, with the tools of the servers that go eager
        loop = self._desk.agent_loop()
        self._memory().begin_run()  # one snapshot of memory per run
        try:
            return await loop.run_turn()
        except asyncio.CancelledError:
            self._append(notice("Turn cancelled.", "info"), emit=True)
            raise
        finally:
            self._ledger.settle()  # the answer (or its partial) is in: the gauge shows the next
