"""What each desk may ask of the window: small typed ports onto `MainWindow`.

The window (desktop/main_window.py) owns its widgets — the composer, the header, the banners,
the transcript, the sidebar, the memory panel — and is the one module that writes them. A
desk is handed the window as the port listing only what that desk needs: intents that say
what the user should see (`show_error`, `name_agent`, `put_draft`), and the window's signals
for what the user or the engine asked of the desk (`closing`, `conversation_open_requested`).
No port offers a widget; tests/test_house_rules.py checks that no desk reaches one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from engine.api import Listing, Suggestion


class Window(Protocol):
    def as_widget(self) -> QWidget:
        """The window as a whole: the parent of a desk and of the dialogs it opens, with its
        place on the screen and its actions (never a way to its widgets)."""


class Banners(Protocol):
    def show_error(self, kind: str, text: str, *, retry: bool = False) -> None:
        """A fault in words in the banner (`kind` titles it); `retry`: with a Retry."""


class DraftsWindow(Window, Protocol):
    """The composer's text, for the drafts kept per conversation (desktop/drafts.py)."""

    @property
    def draft_edited(self) -> SignalInstance:
        """The composer's text changed (typed, or put there by Brim)."""

    def typed(self) -> str:
        """The composer's text now."""

    def put_draft(self, text: str) -> None:
        """The composer holds `text` (a draft brought back; "" empties it), the cursor at
        its end."""


class NavigatorWindow(DraftsWindow, Banners, Protocol):
    """Agents and conversations from the sidebar, start-up, the window's place (navigator)."""

    @property
    def closing(self) -> SignalInstance:
        """The user closed the window."""

    @property
    def new_conversation_requested(self) -> SignalInstance:
        """A typed `/new`: the session opened a new conversation."""

    @property
    def conversation_open_requested(self) -> SignalInstance:
        """(agent name, conversation id or None for a new one) picked in the sidebar."""

    @property
    def conversation_rename_requested(self) -> SignalInstance:
        """(conversation id, new title)."""

    @property
    def conversation_delete_requested(self) -> SignalInstance:
        """(conversation id, its title)."""

    @property
    def conversation_restore_requested(self) -> SignalInstance:
        """(conversation id): a delete's Undo."""

    @property
    def folder_requested(self) -> SignalInstance:
        """The sidebar's folder button: choose the folder new conversations work in."""

    def fail_start(self, kind: str, text: str, *, retry: bool = False) -> None:
        """Nothing could be started: the banner says why, the header's state says so."""

    def show_setup_notice(self, level: str, title: str, text: str) -> None:
        """What start-up found (broken agent files, a first start, a folder chosen), in the
        setup banner above the fault banner."""

    def name_agent(self, name: str, model: str) -> None:
        """The header names the agent and its model."""

    def last_sent(self) -> str:
        """What was last sent from the composer."""

    def show_listing(self, listing: Listing, current: str | None) -> None:
        """The sidebar lists these agents and conversations, `current` highlighted."""

    def mark_current(self, agent: str, conversation_id: str) -> None:
        """The sidebar's highlight is on this conversation."""

    def show_folder(self, folder: str | None) -> None:
        """The sidebar says which folder new conversations work in (None: none)."""

    def split_sizes(self) -> list[int]:
        """The sidebar's and the chat's widths, to be saved."""

    def restore_split(self, sizes: list[int]) -> None:
        """The sidebar's and the chat's widths, as saved."""


class AgentEditingWindow(Window, Banners, Protocol):
    """The agent editor opened, and a saved agent put into effect (agent_editing)."""

    @property
    def agent_editor_requested(self) -> SignalInstance:
        """`/agent`: edit the current agent."""

    @property
    def edit_agent_requested(self) -> SignalInstance:
        """(agent name) to edit, from the sidebar."""

    def show_notice(self, text: str) -> None:
        """A line from Brim in the conversation (a save waiting for the turn)."""

    def name_agent(self, name: str, model: str) -> None:
        """The header names the agent and its model."""

    def focus_composer(self) -> None:
        """The composer has the focus (a dialog closed)."""


class AgentDeskWindow(Window, Banners, Protocol):
    """Agents made, copied, removed and restored (agent_desk)."""

    @property
    def new_agent_requested(self) -> SignalInstance:
        """The sidebar's New agent, or `/agent new`."""

    @property
    def duplicate_agent_requested(self) -> SignalInstance:
        """(agent name)."""

    @property
    def delete_agent_requested(self) -> SignalInstance:
        """(agent name): its file goes to the trash."""

    @property
    def restore_agent_requested(self) -> SignalInstance:
        """(agent name): a delete's Undo."""

    def offer_agent_undo(self, name: str) -> None:
        """The sidebar's undo bar offers the deleted agent back."""

    def clear_setup_notice(self, about: str) -> None:
        """The setup banner goes if it is up and says `about`."""


class MemoryWindow(Window, Protocol):
    """The review queue, the waiting badge, the review dialog, the browser and `/learn`
    (memory_desk)."""

    @property
    def memory_review_requested(self) -> SignalInstance:
        """`/memory review`, the queue's Review, the badge."""

    @property
    def memory_browser_requested(self) -> SignalInstance:
        """`/memory`, the queue's Browse."""

    @property
    def learn_started(self) -> SignalInstance:
        """`/learn` went to the session."""

    def show_memory(self, review_tip: str) -> None:
        """Memory is on: the review queue shows under the rail; the badge, once any
        suggestion waits, says so (`review_tip` its tooltip)."""

    def show_suggestions(self, items: list[Suggestion], scopes: dict[str, str]) -> None:
        """The review queue lists these (`scopes` names each suggestion's scope)."""

    def show_waiting(self, count: int) -> None:
        """The badge says how many suggestions wait (hidden at none)."""

    def show_notice(self, text: str) -> None:
        """A line from Brim in the conversation (what a review did)."""

    def select_message(self, message_id: str, quote: str) -> bool:
        """Scroll to a user message with the quoted words selected; False: not shown."""

    def focus_composer(self) -> None:
        """The composer has the focus (a review closed)."""


class SendingWindow(Window, Protocol):
    def send_message(self, text: str) -> None:
        """`text` sent as if typed into the composer (`--send`, a scripted screenshot)."""
