"""A session's part in memory (engine/memory): opening it with the conversation, the
extraction compaction runs before it summarizes, `/learn` (alias `/reflect`), the suggestions
waiting for review, and the reflection started on leaving a conversation.

A mixin of `ChatSession` (engine/session.py) rather than a separate object: the memory steps
need the session's provider, window, store and event sink as they are at the moment, and
`learn()` stays a method of the session as the desktop calls it. The attributes below are the
session state it reads and writes.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config import AgentConfig
from engine.context.compaction import CompactionPlan
from engine.events import (
    ErrorEvent,
    Event,
    LearnProgressEvent,
    MemorySuggestionsEvent,
    NoticeEvent,
    StateEvent,
)
from engine.memory import Complete, MemoryService, SessionMemory, provider_complete
from engine.messages import user
from engine.paths import BrimPaths
from engine.providers.base import Provider
from engine.store import Store
from engine.tokens import TokenCounter, counter_for
from engine.window import WindowResolution

log = logging.getLogger(__name__)


class SessionMemoryMixin:
    """`ChatSession`'s memory steps (mixed into the session)."""

    agent: AgentConfig
    paths: BrimPaths
    workspace: Path | None
    conversation_id: str
    ephemeral: bool
    internal: bool
    memory_enabled: bool
    reflect_on_close: bool
    _store: Store | None
    _provider: Provider | None
    _window: WindowResolution | None
    _counter: TokenCounter | None
    _memory: SessionMemory | None
    _manual_compaction: bool
    _learn_task: asyncio.Task[None] | None
    _had_turn: bool
    _to_reflect: list[str]

    if TYPE_CHECKING:  # the session's own, in engine/session.py

        def _emit(self, event: Event) -> None: ...
        async def _resolve_window(self) -> None: ...

    @property
    def _memory_writes(self) -> bool:
        """The gate, computed here at the call site: a top-level, persistent run only."""
        return self._memory is not None and self._memory.writes

    def _open_memory(self) -> None:
        if not self.memory_enabled:
            return
        self._memory = SessionMemory(
            MemoryService.for_paths(self.paths),
            agent=self.agent.name,
            workspace=self.workspace,
            writes=not (self.ephemeral or self.internal),
            conversation=lambda: self.conversation_id,
        )

    def _memory_complete(self) -> Complete:
        assert self._provider is not None
        # The session's choice: the summarizer model, or the agent's when it is not served.
        choose = getattr(self, "summarizer_model", None)
        model = choose() if callable(choose) else self.agent.summarizer_model or self.agent.model
        return provider_complete(self._provider, model, num_ctx=self.agent.num_ctx)

    def _count_text(self, text: str) -> int:
        if self._counter is None:
            assert self._provider is not None
            self._counter = counter_for(self._provider, self.agent.model)
        return self._counter.count_message(user(text))

    async def _extract_memory(self, plan: CompactionPlan) -> None:
        """The compaction hook: suggest durable facts from the messages about to go."""
        if self._memory is None or self._manual_compaction or self._window is None:
            return
        self._emit(StateEvent("suggesting memories"))
        await self._memory.extract(
            plan,
            complete=self._memory_complete(),
            count_text=self._count_text,
            window=self._window.window,
        )
        self._emit(StateEvent("compacting"))

    def _emit_pending_memory(self, always: bool = False) -> None:
        if self._memory is None:
            return
        pending = self._memory.pending()
        if pending or always:
            self._emit(MemorySuggestionsEvent(pending=pending))

    async def _run_learn(self) -> None:
        """`/learn` as a task `cancel()` reaches (Esc, the desktop's Cancel)."""
        self._learn_task = asyncio.create_task(self.learn())
        try:
            await self._learn_task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        finally:
            self._learn_task = None

    async def learn(self) -> None:
        """`/learn` (alias `/reflect`): scan what this conversation said since the last
        reflection, one curation call, then tell how many suggestions wait. Never raises."""
        if self._memory is None or not self._memory.writes or self._store is None:
            self._emit(NoticeEvent("info", "Memory is off for this conversation."))
            return
        if self._window is None:
            await self._resolve_window()
            if self._window is None:
                return
        self._emit(StateEvent("learning"))
        try:
            report = await self._memory.learn(
                self._store,
                complete=self._memory_complete(),
                count_text=self._count_text,
                window=self._window.window,
                progress=lambda step, steps, text: self._emit(
                    LearnProgressEvent(step, steps, text)
                ),
            )
        except Exception as exc:
            log.warning("memory: learn failed", exc_info=True)
            self._emit(ErrorEvent("memory", f"Learning failed; nothing was claimed: {exc}"))
        except asyncio.CancelledError:
            self._emit(NoticeEvent("info", "Learning cancelled; /learn again picks it up."))
            raise
        else:
            queued = len(report.queued) if report is not None else 0
            self._emit(NoticeEvent("info", f"Learn: {queued} new suggestions for review."))
        finally:
            self._emit_pending_memory(always=True)
            self._emit(StateEvent("ready"))

    async def _reflect_on_leaving(self, *, closing: bool = False) -> None:
        """Closing or leaving a conversation that had a turn: a detached reflection.

        On the embedded engine a reflection loads its own copy of the model; beside the
        one this session holds that can be more memory (or GPU memory) than the machine
        has. So there, leaving a conversation only notes it, and closing starts one
        reflection over every conversation noted, which loads the model once."""
        if not (self.reflect_on_close and self._memory_writes):
            return
        if self._had_turn:
            self._had_turn = False
            if self.conversation_id not in self._to_reflect:
                self._to_reflect.append(self.conversation_id)
        if not self._to_reflect or (self.agent.provider == "embedded" and not closing):
            return
        conversations, self._to_reflect = self._to_reflect, []
        assert self._memory is not None
        await asyncio.to_thread(
            self._memory.spawn_reflection,
            self.agent,
            data_dir=self.paths.root if self.paths.overridden else None,
            conversations=conversations,
        )
