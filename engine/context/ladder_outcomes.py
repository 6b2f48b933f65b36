"""What the ladder's passes hand back to the agent loop: the request `prepare` decided on,
and the history a compaction or an overflow pass left."""

from __future__ import annotations

from dataclasses import dataclass

from engine.context.budget import ContextUsage
from engine.context.compaction import CompactionResult
from engine.context.fitting import FitResult
from engine.messages import Message


@dataclass(frozen=True)
class PreparedRequest:
    """What `prepare` decided. Store `history` back as the conversation's model messages
    and send `request` (the history plus the ephemeral nudge, which is never stored)."""

    history: list[Message]
    request: list[Message]
    nudge: Message | None
    usage: ContextUsage  # of `request`, overhead included
    changed: bool  # the history was rewritten (cleared, compacted or trimmed)
    cleared: int = 0
    compaction: CompactionResult | None = None
    trimmed: int = 0
    fitted: FitResult | None = None  # what the fit rung cut (None: it did not run)

    @property
    def fits(self) -> bool:
        """False only when even the ladder's last resort left the request over the window:
        what no rung may cut (the system prompt, the user's own message, the checkpoint)
        is itself too big, and sending it will meet an overflow."""
        return not self.usage.over_window


@dataclass(frozen=True)
class LadderOutcome:
    """The result of `compact`, `on_overflow` and `on_shared_pool`: the new history, what
    compaction did (None when it could not run at all) and how many messages trimming
    dropped."""

    history: list[Message]
    compaction: CompactionResult | None
    trimmed: int
    tokens_before: int
    tokens_after: int

    @property
    def shrank(self) -> bool:
        """Whether the history got smaller; an overflow retry without it would only fail
        the same way, so the caller gives up instead."""
        return self.tokens_after < self.tokens_before
