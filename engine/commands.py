"""The slash commands a conversation understands, named once for every front end.

The composer completes from this list and the session runs what it can run itself; the
desktop opens its overlays for the ones that show something (`/context`, `/usage`, `/work`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    text: str  # exactly what is typed
    description: str


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/agent", "edit this agent: engine, model, window pin and ceiling"),
    SlashCommand("/compact", "summarize older messages now to free room"),
    SlashCommand("/context", "what fills the context window, as a snapshot"),
    SlashCommand("/usage", "requests and tokens this conversation has spent"),
    SlashCommand("/new", "start a new conversation with this agent"),
    SlashCommand("/work", "the agent's work state (goal, todos) for this conversation"),
    SlashCommand("/work clear", "forget the work state of this conversation"),
    SlashCommand("/learn", "suggest memories from this conversation, then review them"),
    SlashCommand("/memory", "browse memory: scopes, entries and their receipts"),
    SlashCommand("/memory review", "accept or reject the waiting memory suggestions"),
)

_BY_TEXT = {c.text: c for c in COMMANDS}
# Other names for a command (seed 000: "/learn (alias /reflect)"); not offered in completion.
ALIASES: dict[str, str] = {"/reflect": "/learn"}


def parse_command(text: str) -> SlashCommand | None:
    """The command `text` is (surrounding blanks and repeated spaces forgiven), or None
    for ordinary text, which goes to the model."""
    normalized = " ".join(text.split())
    return _BY_TEXT.get(ALIASES.get(normalized, normalized))


def completions(prefix: str) -> list[SlashCommand]:
    """Commands that start with what has been typed so far (only once it starts with /)."""
    typed = " ".join(prefix.split()) if prefix.strip() else ""
    if not typed.startswith("/"):
        return []
    return [c for c in COMMANDS if c.text.startswith(typed) and c.text != typed]
