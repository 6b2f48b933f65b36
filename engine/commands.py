"""The slash commands a conversation understands, named once for every front end, and the
one router that decides what a submitted text is.

The composer completes from this list. Every submitted text goes to the session, which
follows `route(text)`: a message for the model, a report it answers (`/context`, `/usage`,
`/work`), an action it runs (`/compact`, `/learn`), or a view the front end opens (`/agent`,
`/memory`, `/memory review`, `/new`), announced with a `ViewRequestEvent`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from engine.events import AcceptedEvent, NoticeEvent


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
# Other names for a command (`/learn` was once `/reflect`); not offered in completion.
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


class Action(Enum):
    """What the session does with a submitted text."""

    MESSAGE = "message"  # ordinary text: a turn with the model
    REPORT = "report"  # answered from what the session knows (`answer_command`)
    COMPACT = "compact"
    LEARN = "learn"
    VIEW = "view"  # a view the front end opens (a `ViewRequestEvent`)


# The views a command asks the front end to open (ViewRequestEvent.view).
VIEW_AGENT_EDITOR = "agent_editor"
VIEW_MEMORY_BROWSER = "memory_browser"
VIEW_MEMORY_REVIEW = "memory_review"
VIEW_NEW_CONVERSATION = "new_conversation"
VIEWS: tuple[str, ...] = (
    VIEW_AGENT_EDITOR,
    VIEW_MEMORY_BROWSER,
    VIEW_MEMORY_REVIEW,
    VIEW_NEW_CONVERSATION,
)
# NoticeEvent.kind of the words a front end without the view is told instead (the headless
# chat's "Review memory with `brim memory review`."); a front end that opens the view
# need not show them.
NOTICE_VIEW_FALLBACK = "view_fallback"


@dataclass(frozen=True)
class Route:
    """The router's decision for one submitted text."""

    action: Action
    command: SlashCommand | None = None  # None for a message
    view: str = ""  # for Action.VIEW: one of VIEWS
    # Taken even while a turn runs (a report, or a view that does not touch the turn).
    while_busy: bool = False

    @property
    def is_message(self) -> bool:
        return self.action is Action.MESSAGE

    def accepted(self, text: str) -> AcceptedEvent:
        """The event that says `text` was taken as this route decides."""
        return AcceptedEvent(
            text, self.action.value, takes_turn=not self.while_busy, view=self.view
        )


_ROUTES: dict[str, Route] = {
    "/context": Route(Action.REPORT, while_busy=True),
    "/usage": Route(Action.REPORT, while_busy=True),
    "/work": Route(Action.REPORT, while_busy=True),
    "/work clear": Route(Action.REPORT, while_busy=True),
    "/compact": Route(Action.COMPACT),
    "/learn": Route(Action.LEARN),
    "/agent": Route(Action.VIEW, view=VIEW_AGENT_EDITOR, while_busy=True),
    "/memory": Route(Action.VIEW, view=VIEW_MEMORY_BROWSER, while_busy=True),
    "/memory review": Route(Action.VIEW, view=VIEW_MEMORY_REVIEW, while_busy=True),
    "/new": Route(Action.VIEW, view=VIEW_NEW_CONVERSATION),
}


def route(text: str) -> Route:
    """What `text` is: a command (its route, with the command) or a message for the model."""
    command = parse_command(text)
    if command is None:
        return Route(Action.MESSAGE)
    return replace(_ROUTES[command.text], command=command)


def view_fallback_notice(view: str, agent_file: str) -> NoticeEvent:
    """What a front end without `view` is told instead (a headless chat): where the agent's
    file is, or how to review memory. Its kind lets a front end that opens the view skip it."""
    if view == VIEW_AGENT_EDITOR:
        text = f"Edit the agent in Brim's desktop or in {agent_file}."
    else:
        text = "Review memory with `brim memory review`."
    return NoticeEvent("info", text, kind=NOTICE_VIEW_FALLBACK, details={"view": view})
