"""The engine's window for one session, and the agent loop wired for it.

The window is probed from the engine (a local model loads then) and told once: a window
event, and the start notices kept in the conversation for when it is reopened. The system
prompt is written against it, tools the agent gives but this window or folder withholds
are said once per conversation, and the loop is wired again whenever the window or the
conversation changes (engine/session/wiring.py), folding in a resumed conversation's
journal. A window the engine shows later (an error's figure, a report) replaces it
through the loop's `on_window`, and the tools are decided again against it.

`WindowDesk` holds what it needs of the session as its parts and as callables for those
the session replaces (its provider, once started; its memory, once opened).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import engine.session.tools_offer as offer
from engine.agent.loop import AgentLoop
from engine.config import AgentConfig
from engine.events import EventSink, WindowEvent
from engine.messages import Message, notice
from engine.providers.base import Provider
from engine.session.adapters import RegistryRunner
from engine.session.budget import fold_in_journal
from engine.session.conversation import Conversation
from engine.session.engine_calls import probe_window_telling, start_notices
from engine.session.learning import SessionLearning
from engine.session.ledger import ContextLedger
from engine.session.memory_link import MemoryLink
from engine.session.outcome import describe_outcome
from engine.session.restoring import CompactionDesk
from engine.session.summarizer import Summarizer
from engine.session.wiring import LoopHooks, LoopSetting, decide_tool_schemas, wire_agent_loop
from engine.tokens import TokenCounter
from engine.window.resolution import WindowResolution

Append = Callable[..., None]  # (message, emit=False): persisted first, told when `emit`


class WindowDesk:
    """The window as the engine serves it, and the loop wired for it and the conversation."""

    def __init__(
        self,
        agent: AgentConfig,
        workspace: Path | None,
        conversation: Conversation,
        ledger: ContextLedger,
        *,
        provider: Callable[[], Provider | None],
        memory: Callable[[], MemoryLink],
        counter: Callable[[], TokenCounter],
        setting: Callable[[], LoopSetting],
        summarizer: Summarizer,
        learning: SessionLearning,
        compactions: CompactionDesk,
        emit: EventSink,
        append: Append,
    ) -> None:
        self._agent = agent
        self._workspace = workspace
        self._conversation = conversation
        self._ledger = ledger
        self._provider = provider
        self._memory = memory
        self._counter = counter
        self._setting = setting
        self._summarizer = summarizer
        self._learning = learning
        self._compactions = compactions
        self._emit = emit
        self._append = append
        self.window: WindowResolution | None = None
        self.loop: AgentLoop | None = None  # None: wired again at its next use
        self.tools: RegistryRunner | None = None

    async def resolve(self) -> None:
        """Probe the engine's window (loading a local model) and tell it; the prompt is
        written against it and the loop wired. Left unknown when the engine did not say."""
        provider = self._provider()
        assert provider is not None
        resolution = await probe_window_telling(provider, self._agent, self._emit, load=True)
        if resolution is None:
            return
        self.window = resolution
        self.write_system_prompt()
        self.loop = None
        if self._ledger.needs_window:
            # Restored before the window was known: draw it against the window.
            self._ledger.restore_timeline(self._conversation.store, self._conversation.id)
        self._tell(list(resolution.warnings))
        # Said once (the window event, or a notice with data); kept for when it is reopened.
        for message, told in start_notices(resolution, self._conversation.has_notice):
            self._append(message, emit=told)
        await self._rewire_telling()

    async def switched(self) -> None:
        """Another conversation is open: the known window told for it, the loop wired."""
        self.write_system_prompt()
        self.loop = None
        if self.window is not None:
            self._tell([])
            await self._rewire_telling()

    def _tell(self, warnings: list[str]) -> None:
        assert self.window is not None
        self._emit(
            WindowEvent(
                window=self.window.window,
                source=self.window.source,
                warnings=warnings,
                conversation=self._conversation.id,
            )
        )

    async def _rewire_telling(self) -> None:
        assert self.window is not None
        self._say_tools_are_unavailable(self.window)
        self.rewire()
        await self._fold_in_journal()

    async def _fold_in_journal(self) -> None:
        """A resumed conversation's journal, sized from the window and the history it joins."""
        if (loop := self.loop) is not None:
            await fold_in_journal(loop, self._conversation, self._counter().count_text)

    def _say_tools_are_unavailable(self, resolution: WindowResolution) -> None:
        """Tools given but withheld (session/tools_offer.py): said once per conversation."""
        agent, workspace = self._agent, self._workspace
        if text := offer.tools_withheld(agent, workspace, resolution, self._conversation):
            self._append(text, emit=True)

    def write_system_prompt(self) -> None:
        """A new conversation's system message, or a saved one's changed stable prompt."""
        parts = offer.prompt_parts(self._agent, self._workspace, self._memory().line)
        messages: list[Message] = self._conversation.messages
        if message := offer.system_message_due(messages, parts, self.window):
            self._append(message)

    def agent_loop(self) -> AgentLoop:
        """The wired loop (wired when the window became known or the conversation changed)."""
        if self.loop is None:
            self.rewire()
        assert self.loop is not None
        return self.loop

    def rewire(self) -> None:
        """Wire the agent loop for the conversation and window as they are now."""
        provider = self._provider()
        assert provider is not None and self.window is not None
        memory = self._memory()
        wired = wire_agent_loop(
            self._agent,
            provider,
            self.window,
            self._conversation,
            memory.memory,
            setting=self._setting(),
            hooks=LoopHooks(
                sink=self._emit,
                ladder_sink=self._ledger.on_ladder_event,
                summarize=self._summarizer.summarize,
                compact_tool=self._compact_from_tool,
                before_summarize=self._learning.extract if memory.writes else None,
                on_window=self._window_learned,
            ),
        )
        self.tools = wired.tools
        self._advise(wired.pin_advice)
        self.loop = wired.loop
        self._compactions.shape(wired.loop)

    def _advise(self, advice: str | None) -> None:
        if advice and not self._conversation.has_notice(advice):
            self._append(notice(advice, "warning"), emit=True)

    def _window_learned(self, resolution: WindowResolution) -> None:
        self.window = resolution  # the engine's real window: reports and next loop use it
        provider = self._provider()
        if self.loop is not None and provider is not None:  # the tools, decided again
            found = (self._counter(), resolution, self._conversation.messages)
            self._advise(decide_tool_schemas(self.tools, self._agent, provider, *found))

    async def _compact_from_tool(self) -> str:
        """The summarize_context tool's answer: what the ladder really did, in figures."""
        assert self.loop is not None
        return describe_outcome(await self.loop.compact_outcome())
