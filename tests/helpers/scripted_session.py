"""The engine's own `ChatSession` for the desktop's tests and screenshots: a temporary data
folder, and the in-process engine (tests/helpers/fake_provider.py) in place of a model.

Nothing of the session is re-implemented: what a test wants to happen (an answer streamed
slowly, a turn that runs until Esc, an engine error, a tool call, a cut answer, a slow start)
is scripted on the engine, and the session meets it as it meets a real one.

    sessions = ScriptedSessions.on(tmp_path, InProcessEngine(window=8192))
    sessions.engine.script("Hello.")
    app = DesktopApp(sessions.factory)
    ... sessions.session.cancels, sessions.asked()

`WatchedSession` is `ChatSession` itself, noting what the desktop asked of it (on which
threads, what it handed to `send`, how often it called `cancel`); it changes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AgentConfig
from engine.context.guided import is_compaction_request
from engine.events import EventSink
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.session.engine_calls import LoadProgress
from engine.session.tools_offer import PromptParts, opening_system_message
from engine.store import Store
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

# What the desktop's tests call the agent and its model (the header shows them).
AGENT_NAME = "default"
MODEL = "SmolLM2-135M-Instruct"
# What the engine answers when a test scripted nothing: a compaction's request gets a
# checkpoint in the summarizer's headings, any other this.
DEFAULT_ANSWER = "Hello from the fake."
CHECKPOINT = (
    "## Goal\nAnswer the user's questions.\n"
    "## Constraints & Preferences\n- none\n## Covered So Far\n- the readings so far\n"
    "## Progress\n### Done\n- noted the readings\n### In Progress\n- (none)\n"
    "### Blocked\n- (none)\n## Key Decisions\n- none\n## Next Steps\n- keep noting\n"
    "## Critical Context\n- none\n"
)


class WatchedSession(ChatSession):
    """ChatSession, noting the thread of every call the desktop makes on it (the bridge must
    make them all on the engine's loop), what it handed to `send` and how often it asked
    to `cancel`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self.call_threads: set[int] = set()
        self.received: list[str] = []  # every text handed to send, command or message
        self.cancels = 0

    def _called(self) -> None:
        with self._lock:
            self.call_threads.add(threading.get_ident())

    async def start(self) -> None:
        self._called()
        await super().start()

    async def send(self, text: str) -> None:
        self._called()
        with self._lock:
            self.received.append(text)
        await super().send(text)

    def cancel(self) -> None:
        self._called()
        with self._lock:
            self.cancels += 1
        super().cancel()

    async def retry(self) -> None:
        self._called()
        await super().retry()

    async def open_conversation(self, conversation_id: str | None) -> None:
        self._called()
        await super().open_conversation(conversation_id)

    async def close(self) -> None:
        self._called()
        await super().close()

    def history(self) -> list[Message]:
        self._called()
        return super().history()

    def transcript(self) -> list[Message]:
        self._called()
        return super().transcript()

    def lower_pin(self, num_ctx: int) -> bool:
        self._called()
        return super().lower_pin(num_ctx)


def is_summary_request(request: Request) -> bool:
    """A compaction's request (the summarizer's), not the agent's."""
    messages = request.messages
    if not messages:
        return False
    system = messages[0].content if messages[0].role == "system" else ""
    return is_compaction_request(system, messages[-1].content)


def default_answer(request: Request) -> Answer:
    return Answer(CHECKPOINT if is_summary_request(request) else DEFAULT_ANSWER)


def asked(engine: InProcessEngine) -> list[str]:
    """The user's message of each turn that reached the engine, in order (a turn's later
    requests, after its tool calls, ask about the same message; a summary is no turn)."""
    seen: set[str] = set()
    out: list[str] = []
    for request in engine.requests:
        if is_summary_request(request):
            continue
        last = next((m for m in reversed(request.messages) if m.role == "user"), None)
        if last is not None and last.id not in seen:
            seen.add(last.id)
            out.append(last.content)
    return out


def save_conversation(
    paths: BrimPaths, agent: AgentConfig, messages: list[Message], workspace: Path | None = None
) -> str:
    """A conversation saved in the data folder's store, as an earlier session left it: the
    agent's opening system message first (unless `messages` has one), then `messages`."""
    paths.ensure()
    parts = PromptParts(agent.system_prompt, workspace, "")
    opening = opening_system_message([], parts, None)
    saved = messages if messages and messages[0].role == "system" else [opening, *messages]
    with Store.open(paths.db_path) as store:
        conversation = store.create_conversation(agent.name)
        for message in saved:
            if message is not None:
                store.append_message(conversation, message)
    return conversation


@dataclass
class ScriptedSessions:
    """Real sessions on one data folder over one scripted engine: `factory` is what the
    desktop is handed. A reopen (the same factory again) opens the conversation the last
    session had, as the desktop does after an agent is saved."""

    engine: InProcessEngine
    paths: BrimPaths
    agent: AgentConfig
    workspace: Path | None = None
    memory: bool = False
    conversation_id: str | None = None  # the saved one the first session opens
    sessions: list[WatchedSession] = field(default_factory=list)

    @classmethod
    def on(
        cls,
        root: Path,
        engine: InProcessEngine | None = None,
        *,
        history: list[Message] | None = None,
        workspace: Path | None = None,
        memory: bool = False,
        **agent: Any,
    ) -> ScriptedSessions:
        """Sessions under `root` (the data folder is `root/home`): `agent` changes the
        desktop tests' agent (its name, model or any setting); `history` is a conversation
        saved before, which the first session opens."""
        engine = engine or InProcessEngine(window=8192)
        engine.responder = default_answer
        config = AgentConfig(name=AGENT_NAME, provider="llamacpp", model=MODEL)
        config = config.with_changes(**agent) if agent else config
        paths = BrimPaths.resolve(root / "home")
        saved = save_conversation(paths, config, history, workspace) if history else None
        return cls(engine, paths, config, workspace, memory, saved)

    def factory(self, sink: EventSink) -> WatchedSession:
        conversation = self.sessions[-1].conversation_id if self.sessions else self.conversation_id
        session = WatchedSession(
            self.agent,
            self.paths,
            sink,
            conversation_id=conversation or None,
            workspace=self.workspace,
            provider=self.engine,
            memory=self.memory,
        )
        if self.engine.loads_model_in_process:  # as provider_for hands the embedded engine
            self.engine.on_load_progress = LoadProgress(sink)
        self.sessions.append(session)
        return session

    @property
    def session(self) -> WatchedSession:
        """The session the desktop was handed last."""
        return self.sessions[-1]

    def asked(self) -> list[str]:
        return asked(self.engine)
