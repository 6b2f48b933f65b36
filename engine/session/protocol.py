"""The session a front end drives: every member the desktop's bridge and window use.

`engine.session.ChatSession` implements it, and so does the desktop tests' scripted fake;
a test checks that both have every member with the same signature. A front end calls
nothing else on a session, so nothing it needs is optional or looked up by name.

All coroutines run on the engine's asyncio loop; what happens is said through the event
sink the session was made with (engine/events.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from engine.config import AgentConfig
from engine.messages import Message
from engine.store.records import Receipt
from engine.window.resolution import WindowResolution


class SessionControl(Protocol):
    """One conversation with one agent, as a front end sees it."""

    conversation_id: str  # "" until a conversation is open
    agent: AgentConfig  # the agent it runs (its name and model head the window)
    workspace: Path | None  # the folder its tools work in; None: tools are off

    @property
    def window(self) -> WindowResolution | None:
        """The engine's window once it is known (its model is the one the engine serves)."""
        ...

    async def start(self) -> None:
        """Open the conversation and learn the engine's window (loads a local model)."""
        ...

    async def send(self, text: str) -> None:
        """Everything typed: a message for the model, or a command that
        `engine.commands.route` decides. What is taken is announced with an AcceptedEvent
        before it runs (a message sent while `start` still loads the model waits for it);
        what is refused (a turn is running) gets ErrorEvent("busy"). Never raises."""
        ...

    def cancel(self) -> None:
        """Stop the running turn (or `/learn`); harmless when idle."""
        ...

    async def retry(self) -> None:
        """Probe the engine again if its window is unknown, then re-run the failed turn."""
        ...

    async def open_conversation(self, conversation_id: str | None) -> None:
        """Switch to a saved conversation of this agent, or (None) start a new one."""
        ...

    async def close(self) -> None: ...

    def lower_pin(self, num_ctx: int) -> bool:
        """Lower the agent's pin for this session to `num_ctx` (the user's answer to a
        spill_choice notice); False where there is nothing to lower."""
        ...

    def history(self) -> list[Message]:
        """What the model is sent now (compaction may have replaced older messages)."""
        ...

    def transcript(self) -> list[Message]:
        """The full record to show, including what compaction replaced."""
        ...

    def turn_receipts(self) -> list[Receipt]:
        """The saved turns' receipts, shown under their answers."""
        ...
