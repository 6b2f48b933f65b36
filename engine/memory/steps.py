"""A chat session's steps in memory, each with its inputs passed in: opening memory for the
session, the extraction compaction runs before it summarizes, `/learn` (alias `/reflect`),
the suggestions waiting for review, and the reflection started on leaving a conversation.

The session (engine/session) calls these with what it has at the moment (its provider's
completion, its counter, its window, its store, its event sink); nothing here holds or
imports the session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from engine.config import AgentConfig
from engine.context.compaction import CompactionPlan
from engine.context.replay import ReplayPrefix
from engine.events import (
    ErrorEvent,
    EventSink,
    LearnProgressEvent,
    MemorySuggestionsEvent,
    NoticeEvent,
    StateEvent,
)
from engine.memory.extractor import ScanReport
from engine.memory.requests import Complete
from engine.memory.runtime import SessionMemory
from engine.memory.service import MemoryService
from engine.memory.sizing import CountRequest, CountText
from engine.paths import BrimPaths
from engine.store import Store

log = logging.getLogger(__name__)


def open_session_memory(
    paths: BrimPaths,
    *,
    agent: str,
    workspace: Path | None,
    writes: bool,
    conversation: Callable[[], str],
) -> SessionMemory:
    """Memory for one session. `writes`: only a run with persistence on (not ephemeral)
    writes any; `conversation` names the conversation open now."""
    return SessionMemory(
        MemoryService.for_paths(paths),
        agent=agent,
        workspace=workspace,
        writes=writes,
        conversation=conversation,
    )


def suggestions_event(
    memory: SessionMemory | None, *, always: bool = False
) -> MemorySuggestionsEvent | None:
    """How many suggestions wait for review: an event when some do (or `always`)."""
    if memory is None:
        return None
    pending = memory.pending()
    if pending or always:
        return MemorySuggestionsEvent(pending=pending)
    return None


async def extract_before_summary(
    memory: SessionMemory,
    plan: CompactionPlan,
    *,
    complete: Complete,
    count_text: CountText,
    window: int,
    emit: EventSink,
    count_request: CountRequest | None = None,
    replay: ReplayPrefix | None = None,
    ask_model: bool = True,
) -> ScanReport | None:
    """The compaction hook: suggest durable facts from the messages about to go, asked on
    the conversation the engine has cached when compaction replays it (`replay`); without
    `ask_model` the deterministic first pass alone."""
    emit(StateEvent("suggesting memories"))
    report = await memory.extract(
        plan,
        complete=complete,
        count_text=count_text,
        window=window,
        count_request=count_request,
        replay=replay,
        ask_model=ask_model,
    )
    emit(StateEvent("compacting"))
    return report


async def learn(
    memory: SessionMemory,
    store: Store,
    *,
    complete: Complete,
    count_text: CountText,
    window: int,
    emit: EventSink,
    count_request: CountRequest | None = None,
) -> None:
    """`/learn` (alias `/reflect`): scan what this conversation said since the last
    reflection, one curation call, then tell how many suggestions wait. Never raises but
    for a cancellation (said, then passed on)."""
    emit(StateEvent("learning"))
    try:
        report = await memory.learn(
            store,
            complete=complete,
            count_text=count_text,
            window=window,
            count_request=count_request,
            progress=lambda step, steps, text: emit(LearnProgressEvent(step, steps, text)),
        )
    except Exception as exc:
        log.warning("memory: learn failed", exc_info=True)
        emit(ErrorEvent("memory", f"Learning failed; nothing was claimed: {exc}"))
    except asyncio.CancelledError:
        emit(NoticeEvent("info", "Learning cancelled; /learn again picks it up."))
        raise
    else:
        queued = len(report.queued) if report is not None else 0
        emit(NoticeEvent("info", learned_text(queued, memory.waiting_here())))
    finally:
        pending = suggestions_event(memory, always=True)
        if pending is not None:
            emit(pending)
        emit(StateEvent("ready"))


def learned_text(queued: int, waiting: int) -> str:
    """`/learn`'s answer: what it queued, and what waits from this conversation in all (the
    user's own statements wait from the moment they were sent)."""
    text = f"Learn: {queued} new suggestions for review."
    if waiting > queued:
        text += f" {waiting} from this conversation wait in all."
    return text


class Reflections:
    """The conversations a session leaves with a turn in them, to reflect on.

    Where the model runs in Brim's own process (the embedded engine), a reflection loads its
    own copy of the model; beside the one the session holds that can be more memory (or GPU
    memory) than the machine has. So there, leaving a conversation only notes it, and
    closing starts one reflection over every conversation noted, which loads the model once."""

    def __init__(self) -> None:
        self.had_turn = False  # a turn ran in the open conversation in this session
        self._pending: list[str] = []  # left with a turn, not yet reflected on

    async def on_leaving(
        self,
        memory: SessionMemory,
        conversation_id: str,
        *,
        agent: AgentConfig,
        paths: BrimPaths,
        closing: bool,
        model_in_process: bool,
    ) -> None:
        """Closing or leaving a conversation: a detached reflection, when one is due (with
        the model in Brim's own process, `model_in_process`, only on closing)."""
        if self.had_turn:
            self.had_turn = False
            if conversation_id not in self._pending:
                self._pending.append(conversation_id)
        if not self._pending or (model_in_process and not closing):
            return
        conversations, self._pending = self._pending, []
        await asyncio.to_thread(
            memory.spawn_reflection,
            agent,
            data_dir=paths.root if paths.overridden else None,
            conversations=conversations,
        )
