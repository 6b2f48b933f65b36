"""A session's memory (engine/memory), when it has one: the `SessionMemory`, the standing
line its system prompt carries, and the conversations left to reflect on.

`MemoryLink` runs memory's steps (engine/memory/steps.py) with what the session passes in:
at construction its event sink, the completion memory's calls run on and the count they
are sized by (`MemoryInputs`); at each call the window and the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import AgentConfig
from engine.context.compaction import CompactionPlan
from engine.context.replay import ReplayPrefix
from engine.events import EventSink, NoticeEvent
from engine.memory import Complete, SessionMemory, standing_block
from engine.memory import steps as memory_steps
from engine.memory.extractor import ScanReport
from engine.memory.sizing import counting_with
from engine.messages import Message, user
from engine.paths import BrimPaths
from engine.store import Store
from engine.tokens import TokenCounter


@dataclass(frozen=True)
class MemoryInputs:
    """What memory's steps take from the session: `complete()` builds the completion on the
    model that summarizes now; `counter()` is the session's counter, by which memory's
    requests are sized (a whole request by the engine's own count where it has one), so
    that they fit the window with their answers."""

    reflect_on_close: Callable[[], bool]
    emit: EventSink
    complete: Callable[[], Complete]
    counter: Callable[[], TokenCounter]
    # The engine loads its model into Brim's own process (reflections then wait for close).
    model_in_process: Callable[[], bool]

    def count_text(self, text: str) -> int:
        return self.counter().count_message(user(text))

    def count_request(self, messages: list[Message], tools: list[dict[str, Any]]) -> Awaitable[int]:
        return counting_with(self.counter())(messages, tools)


class MemoryLink:
    """What the session does in memory. Without memory (`memory` None) every step is a
    no-op but `/learn`, which says memory is off."""

    def __init__(self, memory: SessionMemory | None, inputs: MemoryInputs) -> None:
        self.memory = memory
        self._inputs = inputs
        self._emit = inputs.emit
        self.line = ""  # the standing memory line of the open conversation's system prompt
        self._reflections = memory_steps.Reflections()

    @classmethod
    def open(
        cls,
        paths: BrimPaths,
        agent: str,
        workspace: Path | None,
        *,
        writes: bool,
        conversation: Callable[[], str],
        inputs: MemoryInputs,
    ) -> MemoryLink:
        """Memory on: the agent's memory for `workspace`; `writes` False (an ephemeral run)
        reads it and writes nothing; `conversation` names the open one."""
        memory = memory_steps.open_session_memory(
            paths, agent=agent, workspace=workspace, writes=writes, conversation=conversation
        )
        return cls(memory, inputs)

    @property
    def writes(self) -> bool:
        """The gate: a persistent (not ephemeral) run only."""
        return self.memory is not None and self.memory.writes

    def open_new(self) -> str:
        """A new conversation: the snapshot `/learn` diffs against, and its standing line."""
        if self.memory is not None:
            self.line = self.memory.open()
        return self.line

    def open_saved(self, messages: list[Message]) -> None:
        """A saved conversation: the snapshot, and the line its system prompt already has."""
        if self.memory is None:
            return
        self.memory.open()
        first = messages[0] if messages else None
        self.line = standing_block(first.content if first and first.role == "system" else "")

    def begin_run(self) -> None:
        """A turn starts: one snapshot of memory per run, and the conversation had a turn."""
        self._reflections.had_turn = True
        if self.memory is not None:
            self.memory.begin_run()

    def note_statements(self, message: Message) -> None:
        """A user message was sent: its explicit statements wait for review now."""
        if self.memory is not None:
            self.memory.note_statements(message)

    def emit_pending(self, *, always: bool = False) -> None:
        event = memory_steps.suggestions_event(self.memory, always=always)
        if event is not None:
            self._emit(event)

    async def extract(
        self,
        plan: CompactionPlan,
        *,
        window: int,
        replay: ReplayPrefix | None = None,
        ask_model: bool = True,
    ) -> ScanReport | None:
        """The compaction hook: suggest durable facts from the messages about to go (on
        compaction's replayed conversation, `replay`, where it has one)."""
        if self.memory is None:
            return None
        return await memory_steps.extract_before_summary(
            self.memory,
            plan,
            complete=self._inputs.complete(),
            count_text=self._inputs.count_text,
            count_request=self._inputs.count_request,
            window=window,
            emit=self._emit,
            replay=replay,
            ask_model=ask_model,
        )

    def can_learn(self, store: Store | None) -> bool:
        """Whether `/learn` can run; says memory is off when it cannot."""
        if self.writes and store is not None:
            return True
        self._emit(NoticeEvent("info", "Memory is off for this conversation."))
        return False

    async def learn(self, store: Store, *, window: int) -> None:
        assert self.memory is not None
        await memory_steps.learn(
            self.memory,
            store,
            complete=self._inputs.complete(),
            count_text=self._inputs.count_text,
            count_request=self._inputs.count_request,
            window=window,
            emit=self._emit,
        )

    async def leave(
        self, conversation_id: str, agent: AgentConfig, paths: BrimPaths, *, closing: bool
    ) -> None:
        """Closing or leaving a conversation that had a turn: a detached reflection (with
        the model in Brim's own process, one over every conversation left, when the session
        closes)."""
        if not (self._inputs.reflect_on_close() and self.writes):
            return
        assert self.memory is not None
        await self._reflections.on_leaving(
            self.memory,
            conversation_id,
            agent=agent,
            paths=paths,
            closing=closing,
            model_in_process=self._inputs.model_in_process(),
        )
