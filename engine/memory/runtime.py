"""Memory for one chat session: what the session (engine/session/memory_link.py) holds and calls.

The gate lives here and is decided once, from the session's own flags: only a run with
persistence on writes anything (IDs, receipts, direct writes, suggestions, reflection). An
ephemeral run reads memory for its standing line and writes nothing at all; its tools refuse
changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.config import AgentConfig
from engine.context.compaction import CompactionPlan
from engine.context.replay import ReplayPrefix
from engine.memory.extractor import ScanReport, run_scan, scan_statements
from engine.memory.observe import MemoryObserver, standing_line
from engine.memory.reflect import LearnProgress, PassReport, learn_conversation
from engine.memory.requests import Complete, Meter
from engine.memory.service import MemoryService
from engine.memory.sizing import CountRequest, CountText
from engine.memory.sources import SourceSet
from engine.memory.spawn import spawn_reflection
from engine.memory.store import Snapshot
from engine.memory.tools import MemoryToolState, memory_tools
from engine.memory.transcript import ScanInput
from engine.messages import Message
from engine.providers.base import Provider
from engine.store import Store
from engine.tools.registry import Tool

log = logging.getLogger(__name__)

# A compaction's extraction: the person waits on the compaction, so one model request.
EXTRACTION_REQUESTS = 1


class SessionMemory:
    def __init__(
        self,
        service: MemoryService,
        *,
        agent: str,
        workspace: Path | None,
        writes: bool,
        conversation: Callable[[], str],
    ) -> None:
        self.service = service
        self.agent = agent
        self.workspace = workspace.resolve() if workspace is not None else None
        self.writes = writes
        self._conversation = conversation
        self.scopes = service.scopes(agent, self.workspace)
        self.observer = MemoryObserver(
            service, self.scopes, conversation=conversation, writes=writes
        )
        self.start_snapshot: Snapshot | None = None
        self.last_scan: ScanReport | None = None

    # -- the stable prompt and the run boundary ---------------------------------------------

    def open(self) -> str:
        """At the chat's start: the snapshot the session diff is taken against, and the
        standing line for a new conversation's system prompt."""
        try:
            self.start_snapshot = self.observer.begin_run()
        except Exception:
            log.warning("memory: could not read memory", exc_info=True)
            return ""
        return standing_line(self.start_snapshot)

    def begin_run(self) -> None:
        try:
            self.observer.begin_run()
        except Exception:
            log.warning("memory: could not snapshot memory for this run", exc_info=True)

    def waiting_here(self) -> int:
        """The suggestions from the open conversation that wait for review."""
        conversation = self._conversation()
        return sum(1 for s in self.service.pending() if s.conversation == conversation)

    def note_statements(self, message: Message) -> list[str]:
        """The deterministic pass over one user message as it is sent: the user's explicit
        statements ("My name is Alex.", "I always use tabs") wait for review at once, on any
        model, whether or not a compaction or a reflection ever reads the message. The later
        passes skip what is already waiting. Never raises."""
        if not self.writes:
            return []
        try:
            return scan_statements(self._conversation(), [message], self.service, self.scopes)
        except Exception:
            log.warning("memory: could not read the user's statements", exc_info=True)
            return []

    def wrap(self, provider: Provider) -> Provider:
        return self.observer.wrap(provider) if self.writes else provider

    def tools(self, live: Callable[[], Sequence[Message]]) -> list[Tool]:
        """The main agent's memory tools: in a persistent top-level run every change is a
        suggestion queued for the user (never a write, whatever the approval policy), in
        any other run a refusal."""
        state = MemoryToolState(
            self.service,
            self.scopes,
            lambda: SourceSet(self._conversation(), live()),
            "suggest" if self.writes else "read_only",
            actor="agent",
            conversation_id=self._conversation(),
            on_view=self.observer.register_view,
            untrusted=live,
        )
        return memory_tools(state)

    def pending(self) -> int:
        return self.service.pending_count()

    # -- extraction -------------------------------------------------------------------------

    async def extract(
        self,
        plan: CompactionPlan,
        *,
        complete: Complete,
        count_text: CountText,
        window: int,
        count_request: CountRequest | None = None,
        replay: ReplayPrefix | None = None,
        ask_model: bool = True,
    ) -> ScanReport | None:
        """The compaction pass over exactly the messages about to be compressed: the first
        pass over all of them, then one model request (`EXTRACTION_REQUESTS`) that fits
        `window` with its answer; with `replay` (compaction's cached conversation) the model
        is asked on that conversation where it fits, and still only the compressed messages
        can be quoted. Never raises: a failure is logged and compaction goes on."""
        if not self.writes:
            return None
        # Without `ask_model` (a model whose passes never queued a fact) the first pass alone.
        meter = Meter(limit=EXTRACTION_REQUESTS if ask_model else 0)
        try:
            report = await run_scan(
                ScanInput(
                    self._conversation(),
                    plan.removed,
                    summary="\n\n".join(plan.prior_checkpoints),
                    later=plan.tail,
                ),
                service=self.service,
                scopes=self.scopes,
                complete=complete,
                count_text=count_text,
                window=window,
                count_request=count_request,
                replay=replay,
                meter=meter,
            )
        except Exception:
            log.warning("memory: the extractor failed; compacting anyway", exc_info=True)
            return None
        if report.skipped:
            log.info("memory: extraction skipped: %s", report.skipped)
        log.info(
            "memory: extraction before compaction (window %d): %s; queued %s",
            window,
            meter.describe(),
            report.queued,
        )
        self.last_scan = report
        return report

    async def learn(
        self,
        store: Store,
        *,
        complete: Complete,
        count_text: CountText,
        window: int,
        count_request: CountRequest | None = None,
        progress: LearnProgress | None = None,
    ) -> PassReport | None:
        if not self.writes:
            return None
        conversation = self._conversation()
        return await learn_conversation(
            store.records(conversation),
            conversation,
            service=self.service,
            scopes=self.scopes,
            complete=complete,
            count_text=count_text,
            window=window,
            count_request=count_request,
            start_snapshot=self.start_snapshot,
            progress=progress,
        )

    def spawn_reflection(
        self,
        agent: AgentConfig,
        *,
        data_dir: Path | None,
        conversations: list[str] | None = None,
    ) -> bool:
        """Start a detached reflection on `conversations` (default: the current one), run
        with exactly `agent`'s settings; its API key reaches it through its environment,
        never its command line."""
        if not self.writes:
            return False
        return spawn_reflection(
            agent,
            conversations or self._conversation(),
            data_dir=data_dir,
            workspace=self.workspace,
        )
