"""The slash commands a conversation understands, named once for every front end, and the
one router that decides what a submitted text is.

The composer completes from this list. Every submitted text goes to the session, which
follows `route(text)`: a message for the model, a report it answers (`/context`,
`/context show`, `/usage`, `/work`), an action it runs (`/compact`, `/learn`), or a view the
front end opens (`/agent`, `/agent new`, `/memory`, `/memory review`, `/new`), announced
with a `ViewRequestEvent`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Final

from engine.events import AcceptedEvent


@dataclass(frozen=True)
class SlashCommand:
    text: str  # exactly what is typed
    description: str


# "What the model saw": answered by the requests a conversation keeps
# (engine/session/last_request.py), when the session announces it took it.
CONTEXT_SHOW: Final = "/context show"

COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/agent", "edit this agent: engine, model, window pin and ceiling"),
    SlashCommand("/agent new", "make a new agent and open it in the editor"),
    SlashCommand("/compact", "summarize older messages now to free room"),
    SlashCommand(
        "/compaction", "list the compactions; `show N` what one replaced, `restore N` undo it"
    ),
    SlashCommand("/context", "what fills the context window, as a snapshot"),
    SlashCommand(CONTEXT_SHOW, "what the model saw: the last request, part by part"),
    SlashCommand("/usage", "requests and tokens this conversation has spent"),
    SlashCommand("/new", "start a new conversation with this agent"),
    SlashCommand("/work", "the agent's work state (goal, todos) for this conversation"),
    SlashCommand("/work clear", "forget the work state and journal of this conversation"),
    SlashCommand("/learn", "suggest memories from this conversation, then review them"),
    SlashCommand("/memory", "browse memory: scopes, entries and their receipts"),
    SlashCommand("/memory review", "accept or reject the waiting memory suggestions"),
)

_BY_TEXT = {c.text: c for c in COMMANDS}
# Other names for a command (`/learn` was once `/reflect`); not offered in completion.
ALIASES: dict[str, str] = {"/reflect": "/learn"}


# Commands followed by words of their own (`/compaction show 2`): the words are its argument.
TAKES_ARGUMENT: frozenset[str] = frozenset({"/compaction"})
# `/compaction`'s verbs: `show N` is answered beside a turn; `restore N [anyway]` rewrites the
# history and so waits for its turn. `anyway` confirms a restore that reaches the
# auto-compact mark.
COMPACTION_SHOW = "show"
COMPACTION_RESTORE = "restore"
RESTORE_CONFIRMED = "anyway"


def compaction_command(verb: str, compaction: str, *, confirmed: bool = False) -> str:
    """What a front end sends for a compaction's Show (`verb` COMPACTION_SHOW) or Restore
    (COMPACTION_RESTORE; `confirmed` when the user accepted a restore past the auto-compact
    mark); `compaction` is its id (or number)."""
    text = f"/compaction {verb} {compaction}"
    return f"{text} {RESTORE_CONFIRMED}" if confirmed and verb == COMPACTION_RESTORE else text


def parse_command(text: str) -> SlashCommand | None:
    """The command `text` is (surrounding blanks and repeated spaces forgiven), or None
    for ordinary text, which goes to the model."""
    return split_command(text)[0]


def split_command(text: str) -> tuple[SlashCommand | None, str]:
    """The command `text` is and the words after it (for a command in TAKES_ARGUMENT)."""
    normalized = " ".join(text.split())
    command = _BY_TEXT.get(ALIASES.get(normalized, normalized))
    if command is not None:
        return command, ""
    name, _, argument = normalized.partition(" ")
    if name in TAKES_ARGUMENT:
        return _BY_TEXT[name], argument
    return None, ""


def completions(prefix: str) -> list[SlashCommand]:
    """Commands that start with what has been typed so far (only once it starts with /)."""
    typed = " ".join(prefix.split()) if prefix.strip() else ""
    if not typed.startswith("/"):
        return []
    return [c for c in COMMANDS if c.text.startswith(typed) and c.text != typed]


class Action(Enum):
    """What the session does with a submitted text."""

    MESSAGE = "message"  # ordinary text: a turn with the model
    REPORT = "report"  # answered from what the session knows (`answer_command`)
    COMPACT = "compact"
    LEARN = "learn"
    VIEW = "view"  # a view the front end opens (a `ViewRequestEvent`)
    RESTORE = "restore"  # `/compaction restore N`: put back what a compaction replaced


# The views a command asks the front end to open (ViewRequestEvent.view).
VIEW_AGENT_EDITOR = "agent_editor"
VIEW_NEW_AGENT = "new_agent"
VIEW_MEMORY_BROWSER = "memory_browser"
VIEW_MEMORY_REVIEW = "memory_review"
VIEW_NEW_CONVERSATION = "new_conversation"
VIEWS: tuple[str, ...] = (
    VIEW_AGENT_EDITOR,
    VIEW_NEW_AGENT,
    VIEW_MEMORY_BROWSER,
    VIEW_MEMORY_REVIEW,
    VIEW_NEW_CONVERSATION,
)
# NoticeEvent.kind of the words a front end without the view is told instead (the headless
# chat's "Review memory with `brim memory review`."); a front end that opens the view
# need not show them.
NOTICE_VIEW_FALLBACK: Final = "view_fallback"


@dataclass(frozen=True)
class Route:
    """The router's decision for one submitted text."""

    action: Action
    # What the session announces when it takes the text (a front end shows it as sent).
    accepted: AcceptedEvent
    command: SlashCommand | None = None  # None for a message
    view: str = ""  # for Action.VIEW: one of VIEWS
    # Taken even while a turn runs (a report, or a view that does not touch the turn).
    while_busy: bool = False
    argument: str = ""  # the words after a command that takes them (`show 2`)

    @property
    def is_message(self) -> bool:
        return self.action is Action.MESSAGE


# Each command's action, view and whether it is taken while a turn runs.
_ROUTES: dict[str, tuple[Action, str, bool]] = {
    "/context": (Action.REPORT, "", True),
    CONTEXT_SHOW: (Action.REPORT, "", True),
    "/usage": (Action.REPORT, "", True),
    "/work": (Action.REPORT, "", True),
    "/work clear": (Action.REPORT, "", True),
    "/compact": (Action.COMPACT, "", False),
    "/compaction": (Action.REPORT, "", True),
    "/learn": (Action.LEARN, "", False),
    "/agent": (Action.VIEW, VIEW_AGENT_EDITOR, True),
    "/agent new": (Action.VIEW, VIEW_NEW_AGENT, True),
    "/memory": (Action.VIEW, VIEW_MEMORY_BROWSER, True),
    "/memory review": (Action.VIEW, VIEW_MEMORY_REVIEW, True),
    "/new": (Action.VIEW, VIEW_NEW_CONVERSATION, False),
}


def route(text: str) -> Route:
    """What `text` is: a command (its route, with the command) or a message for the model."""
    command, argument = split_command(text)
    action, view, while_busy = (
        _ROUTES[command.text] if command is not None else (Action.MESSAGE, "", False)
    )
    if command is not None and argument.split(" ", 1)[0] == COMPACTION_RESTORE:
        action, while_busy = Action.RESTORE, False  # it rewrites the history: a turn of its own
    submission = uuid.uuid4().hex[:12]
    accepted = AcceptedEvent(text, action.value, not while_busy, view, submission)
    return Route(action, accepted, command, view, while_busy, argument)
