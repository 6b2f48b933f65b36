"""`/learn` as a task the session's cancel reaches (Esc, the desktop's Cancel), and the
memory extraction compaction runs before it summarizes (not for `/compact`).

`SessionLearning` holds what these two need from the session as callables: the window as
it is now (and how to resolve it when unknown), the conversation's store and whether the
compaction running now is the user's `/compact`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from engine.context.compaction import CompactionPlan, ReplayPrefix
from engine.context.summarizer_record import SummarizerRecord
from engine.session.admission import await_quietly_cancelled
from engine.session.memory_link import MemoryLink
from engine.store import Store
from engine.window.resolution import WindowResolution


class SessionLearning:
    def __init__(
        self,
        memory: Callable[[], MemoryLink],
        *,
        window: Callable[[], WindowResolution | None],
        resolve_window: Callable[[], Awaitable[None]],
        store: Callable[[], Store | None],
        manual_compaction: Callable[[], bool],
        record: Callable[[], SummarizerRecord | None] = lambda: None,
    ) -> None:
        """`record`: what the model that summarizes has shown it can write, memory's
        extraction included (engine/context/summarizer_record.py)."""
        self._memory = memory
        self._window = window
        self._resolve_window = resolve_window
        self._store = store
        self._manual = manual_compaction
        self._record = record
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """`/learn` as a task `cancel()` reaches."""
        self._task = asyncio.create_task(self.learn())
        try:
            await await_quietly_cancelled(self._task)
        finally:
            self._task = None

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def learn(self) -> None:
        """`/learn` (alias `/reflect`): scan what this conversation said since the last
        reflection, one curation call, then tell how many suggestions wait. Never raises."""
        memory, store = self._memory(), self._store()
        if not memory.can_learn(store):
            return
        assert store is not None
        if self._window() is None:
            await self._resolve_window()
        window = self._window()
        if window is not None:
            await memory.learn(store, window=window.window)

    async def extract(self, plan: CompactionPlan, replay: ReplayPrefix | None) -> None:
        """The compaction hook (not `/compact`): facts from what goes, on the cached replay."""
        window = self._window()
        if self._manual() or window is None:
            return
        record = self._record()
        ask = record is None or record.asks_memory()
        report = await self._memory().extract(
            plan, window=window.window, replay=replay, ask_model=ask
        )
        if record is None or report is None:
            return
        if not ask:
            record.note_memory(queued=None)
        elif report.rode or (report.meter is not None and report.meter.requests):  # asked
            record.note_memory(queued=len(report.queued) - report.statements)
