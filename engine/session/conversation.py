"""One conversation's messages and their persistence: the store it lives in, the claim that
keeps other Brim processes out of it, and the two ways the history changes (append a message,
replace the model history after the ladder rewrote it).

The agent loop reads and changes the conversation through this object (it meets the loop's
`Conversation` protocol in engine/agent/loop.py): a message is persisted before it is kept in
memory, so a crash never loses a committed message, and nothing reaches the model before it
is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from engine.context import Journal, journal_preamble
from engine.context.checkpoint import stored_checkpoint
from engine.context.journal_preamble import records_to_show
from engine.context.restore import compaction_span
from engine.context.work_state import PREAMBLE_HEAD, CountText
from engine.conversation_claim import ConversationClaim
from engine.events import Event
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session.answer_draft import AnswerDraft
from engine.session.last_request import LastRequests
from engine.store import Receipt, Store, UnknownConversation

log = logging.getLogger(__name__)

# A conversation shows at most this many receipts when it is opened again.
RECEIPTS_SHOWN = 10_000


def _is_preamble(message: Message) -> bool:
    return message.kind == "continuation" and message.content.startswith(PREAMBLE_HEAD)


class Conversation:
    """The live messages of the conversation a session has open, kept in step with the store.

    `on_replaced` hears every rewrite of the history (the rail shows the rewritten history's
    estimate at once). Without a store (before `open_store`, after `close`) the messages are
    kept in memory only."""

    def __init__(
        self,
        paths: BrimPaths,
        agent_name: str,
        *,
        on_replaced: Callable[[], None] | None = None,
    ) -> None:
        self.paths = paths
        self.agent_name = agent_name
        self.id = ""
        self.store: Store | None = None
        self.claim: ConversationClaim | None = None  # no other process writes it
        self._messages: list[Message] = []
        self._on_replaced = on_replaced
        self._journal_due = False  # loaded, its journal not folded in yet
        self.draft = AnswerDraft(self.work_folder)  # the streaming answer, kept through a crash
        self.last_requests = LastRequests()  # what the model saw, for `/context show`

    # -- the store and the claim ---------------------------------------------------------

    def open_store(self) -> None:
        self.store = Store.open(self.paths.ensure().db_path)

    def close(self) -> None:
        """Close the store and let go of the conversation."""
        if self.store is not None:
            self.store.close()
            self.store = None
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def _take_claim(self, conversation_id: str) -> None:
        """Hold `conversation_id` against other Brim processes (ConversationBusy if one has
        it), then let go of the conversation held before."""
        held = self.claim
        if held is not None and held.held and held.conversation_id == conversation_id:
            return  # reopening its own conversation: the lock is this session's already
        claim = ConversationClaim.take(self.paths.open_dir, conversation_id)
        if self.claim is not None:
            self.claim.release()
        self.claim = claim

    # -- which conversation ----------------------------------------------------------------

    def check_saved(self, conversation_id: str) -> str:
        """Find a saved conversation and claim it, before anything changes: a refusal
        (UnknownConversation, ConversationBusy) leaves the open conversation as it was.
        Returns its id; `load` then makes it the open one."""
        assert self.store is not None
        info = self.store.get_conversation(conversation_id)
        if info is None:
            raise UnknownConversation(conversation_id)
        self._take_claim(info.id)
        return info.id

    def load(self, conversation_id: str) -> None:
        """Make the saved conversation (found and claimed by `check_saved`) the open one."""
        assert self.store is not None
        self.id = conversation_id
        self._messages = self.store.messages(conversation_id)
        self.last_requests.forget()
        self._journal_due = True
        for message in self.draft.recover(self._messages):  # an answer a crash cut short
            self.append(message)

    def create(self, workspace: Path | None) -> None:
        """Start a new, empty conversation of this agent and claim it."""
        assert self.store is not None
        self.id = self.store.create_conversation(
            self.agent_name, workspace=str(workspace) if workspace else None
        )
        self._take_claim(self.id)
        self._messages = []
        self.last_requests.forget()
        self._journal_due = False

    def observe(self, event: Event) -> None:
        """Every event the session emits: the streaming answer is kept through a crash, and
        `/context show` is answered from the requests kept (engine/session/last_request.py)."""
        self.draft.observe(event)
        self.last_requests.observe(event)

    def work_folder(self) -> Path:
        """The conversation's own folder: its journal, work state and tool results."""
        return self.paths.conversation_dir(self.agent_name, self.id)

    async def fold_in_journal(
        self,
        budget: Callable[[], Awaitable[int]],
        count_text: CountText | None,
        *,
        tools: bool = True,
    ) -> None:
        """Resuming: what compaction dropped is absent, so the journal comes back as a
        bounded preamble, framed as claims rather than fact, with only what the history's
        live checkpoints do not already carry (engine/context/journal_preamble.py): none
        when it adds nothing. `budget` (asked only when there is a record to show) is its
        size in tokens, from the window; `tools` whether the requests carry tools. Once per
        load: the session calls it whenever the window becomes known."""
        if not self._journal_due:
            return
        self._journal_due = False
        try:
            entries = Journal(self.work_folder() / "journal.jsonl").read()
        except Exception:
            log.warning("could not read the journal of %s", self.id, exc_info=True)
            return
        # A compaction the user restored replaced nothing any more: its record stays out.
        records = self.store.compactions(self.id) if self.store is not None else []
        restored = {r.id for r in records if r.is_restored}
        summaries = [m for m in self._messages if m.kind == "summary"]
        shown = records_to_show(entries, {m.id for m in summaries}, restored)
        # Opened again with no compaction since: the history already carries a preamble,
        # and a second copy would only cost tokens (it stays bounded, as the seed says).
        if not shown or any(_is_preamble(m) for m in self._messages):
            return
        checkpoints = [stored_checkpoint(m) for m in summaries]
        preamble = journal_preamble(
            shown, await budget(), count_text, live_checkpoints=checkpoints, tools=tools
        )
        if preamble:
            # Brim's words, not the user's: not a row in the transcript, never a source of
            # memory, and like compaction's continuation note it goes at the next compaction
            # (whose summary carries what it said).
            self.append(Message(role="user", content=preamble, kind="continuation"))

    # -- the history -----------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The live list (not a copy): read it, change it only through append and replace."""
        return self._messages

    def live(self) -> list[Message]:
        return list(self._messages)

    def has_notice(self, text: str) -> bool:
        return any(m.kind == "notice" and m.content == text for m in self._messages)

    def append(self, message: Message) -> None:
        """Persist first, then keep in memory: a crash never loses a committed message."""
        if self.store is not None:
            self.store.append_message(self.id, message)
        self._messages.append(message)
        if message.role == "assistant":
            self.draft.drop()

    def replace(self, model_history: list[Message]) -> None:
        """The ladder rewrote the history: the store archives the old rows (nothing is
        lost from the full record) and the live conversation becomes the new one.

        A rewrite that brings a new checkpoint is a compaction's: the store records, under
        the checkpoint's id, the live messages it took out (restorable, engine/session/
        restoring.py)."""
        if self.store is not None:
            checkpoint, replaced = compaction_span(self._messages, model_history)
            self.store.replace_messages(
                self.id, model_history, compaction=checkpoint, replaced=replaced
            )
        self._changed(model_history)

    def restore(self, compaction_id: str, history: list[Message]) -> None:
        """The user put back what `compaction_id` replaced: `history` is the live history
        with those messages in it, and the compaction is marked restored, together."""
        if self.store is not None:
            self.store.restore_compaction(self.id, compaction_id, history)
        self._changed(history)

    def _changed(self, history: list[Message]) -> None:
        self._messages = list(history)
        if self._on_replaced is not None:
            self._on_replaced()

    # -- the full record -------------------------------------------------------------------

    def transcript(self) -> list[Message]:
        """The full record for display: every message ever stored in this conversation,
        including what compaction replaced and the notices the ladder wrote."""
        if self.store is None or not self.id:
            return self.live()
        try:
            return self.store.messages(self.id, include_archived=True)
        except Exception:
            log.warning("could not read the full record of %s", self.id)
            return self.live()

    def turn_receipts(self) -> list[Receipt]:
        """This conversation's turn receipts, oldest first, for a window showing it again.

        The figures are rounded as the live turn_end event rounds them, so a receipt reads
        the same under its answer live and after the conversation is opened again."""
        if self.store is None or not self.id:
            return []
        try:
            saved = self.store.receipts(self.id, limit=RECEIPTS_SHOWN)
        except Exception:
            log.warning("could not read the receipts of %s", self.id)
            return []
        return [
            replace(r, elapsed_s=round(r.elapsed_s, 3), tokens_per_s=round(r.tokens_per_s, 2))
            for r in saved
        ]
