"""Seeing and undoing a compaction: `/compaction`, `/compaction show N` and
`/compaction restore N [anyway]` (the desktop's Show / Restore on a compaction row or
timeline marker sends the same, naming the compaction by its id).

The messages a compaction replaced stay in the store under its id (engine/store/
compactions.py). Showing them says what a restore would do in Brim's count of the next
request; a restore whose history would reach the auto-compact mark is done only when
confirmed (`anyway`), and then the next request's ladder deals with it as with any history.

What a restore changes after it: the conversation's compactions ask the guided questions
(one section at a time, each answer checked, engine/context/guided.py) instead of asking
for the free-form checkpoint the user just undid. The store's record of the restore is what
says so, so it holds when the conversation is opened again. (A checkpoint that was already
guided is asked the same way again: the restored messages are then summarized afresh.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.agent.loop import AgentLoop
from engine.commands import COMPACTION_RESTORE, COMPACTION_SHOW, RESTORE_CONFIRMED
from engine.context.restore import checkpoint_is_live, restored_history
from engine.events import (
    NOTICE_RESTORE_UNCONFIRMED,
    NOTICE_RESTORED,
    CompactionListEvent,
    CompactionRestoredEvent,
    CompactionViewEvent,
    ErrorEvent,
    ErrorKind,
    EventSink,
    NoticeEvent,
)
from engine.messages import Message, alternating, model_messages, notice
from engine.report.context_report import format_tokens
from engine.session.conversation import Conversation
from engine.session.ledger import notice_event
from engine.store import CompactionRecord, Store

USAGE = "`/compaction` lists the compactions; `/compaction show N` and `/compaction restore N`"


@dataclass(frozen=True)
class Measure:
    """A history's next request in Brim's count, against the window and its auto-compact
    mark (all 0 before the window is known)."""

    tokens: int = 0
    window: int = 0
    compact_at: int = 0

    @property
    def fits(self) -> bool:
        """Below the auto-compact mark: the next request would not compact it again."""
        return self.window > 0 and self.tokens < self.compact_at


class CompactionDesk:
    """The `/compaction` commands of one session. `loop` is the session's loop as it is at
    each call (None before the window is known); `emit` the session's event stream."""

    def __init__(
        self, conversation: Conversation, loop: Callable[[], AgentLoop | None], emit: EventSink
    ) -> None:
        self.conversation = conversation
        self._loop = loop
        self._emit = emit

    # -- what the loop does after a restore -------------------------------------------------

    def shape(self, loop: AgentLoop) -> None:
        """A newly wired loop of a conversation in which the user restored a compaction
        compacts with the guided questions."""
        if any(r.is_restored for r in self._records()):
            loop.context.prefer_guided()

    # -- the commands ------------------------------------------------------------------------

    def answer(self, argument: str) -> None:
        """`/compaction` (the list) and `/compaction show N`; answered beside a turn."""
        words = argument.split()
        if not words:
            live = self.conversation.live()
            self._emit(
                CompactionListEvent(
                    [
                        {
                            "number": r.number,
                            "id": r.id,
                            "replaced": r.replaced,
                            "created": r.created,
                            "restored": r.is_restored,
                            "live": checkpoint_is_live(live, r.id),
                        }
                        for r in self._records()
                    ]
                )
            )
            return
        if words[0] != COMPACTION_SHOW or len(words) != 2:
            self._refuse("bad_command", f"Not a /compaction command: {USAGE}.")
            return
        record = self._find(words[1])
        if record is not None:
            self._emit(self._view(record))

    def restore(self, argument: str) -> None:
        """`/compaction restore N [anyway]`: put back what compaction N replaced (the live
        history with them must stay below the auto-compact mark, or be confirmed)."""
        words = argument.split()
        confirmed = words[2:] == [RESTORE_CONFIRMED]
        if (
            words[:1] != [COMPACTION_RESTORE]
            or len(words) not in (2, 3)
            or (len(words) == 3 and not confirmed)
        ):
            self._refuse("bad_command", f"Not a /compaction command: {USAGE} [anyway].")
            return
        record = self._find(words[1])
        if record is None:
            return
        if record.is_restored:
            self._refuse("not_restorable", f"Compaction {record.number} was restored already.")
            return
        live = self.conversation.live()
        history = self._restored(record, live)
        if history is None:
            self._refuse("not_restorable", self._not_live(record))
            return
        measure = self._measure(history)
        figures: dict[str, int | str] = {
            "compaction": record.id,
            "number": record.number,
            "tokens": measure.tokens,
            "window": measure.window,
            "compact_at": measure.compact_at,
        }
        if not measure.fits and not confirmed:
            self._emit(
                NoticeEvent(
                    "warning",
                    _unconfirmed_text(record.number, measure),
                    kind=NOTICE_RESTORE_UNCONFIRMED,
                    details=figures,
                )
            )
            return
        was_live = {m.id for m in live}
        back = sum(1 for m in history if m.id not in was_live)
        self.conversation.restore(record.id, history)
        loop = self._loop()
        if loop is not None:
            loop.context.prefer_guided()
        row = notice(_restored_text(record.number, back, measure), "info").with_meta(
            notice_kind=NOTICE_RESTORED, messages_restored=back, **figures
        )
        self.conversation.append(row)  # part of the record: shown when it is opened again
        self._emit(notice_event(row))
        self._emit(
            CompactionRestoredEvent(
                compaction=record.id,
                number=record.number,
                messages_restored=back,
                messages_before=len(model_messages(live)),
                messages_after=len(model_messages(history)),
                tokens=measure.tokens,
                window=measure.window,
                compact_at=measure.compact_at,
                fits=measure.fits,
            )
        )

    # -- reading the record -----------------------------------------------------------------

    def _store(self) -> Store | None:
        return self.conversation.store if self.conversation.id else None

    def _records(self) -> list[CompactionRecord]:
        store = self._store()
        return store.compactions(self.conversation.id) if store is not None else []

    def _find(self, which: str) -> CompactionRecord | None:
        """Compaction `which` (its number, or its id), or None after saying there is none."""
        records = self._records()
        found = next(
            (r for r in records if which == r.id or (which.isdigit() and int(which) == r.number)),
            None,
        )
        if found is None:
            have = f"it has {len(records)}" if records else "it has none yet"
            self._refuse(
                "unknown_compaction",
                f"No compaction {which} in this conversation ({have}; `/compaction` lists them).",
            )
        return found

    def _replaced(self, record: CompactionRecord) -> list[Message]:
        store = self._store()
        return store.compaction_messages(self.conversation.id, record.id) if store else []

    def _restored(self, record: CompactionRecord, live: list[Message]) -> list[Message] | None:
        store = self._store()
        if store is None:
            return None
        order = store.history_before(self.conversation.id, record.id)
        return restored_history(live, record.id, self._replaced(record), order)

    def _merged_into(self, record: CompactionRecord) -> int:
        """The later compaction whose checkpoint replaced this one's, or 0."""
        for later in self._records()[record.number :]:
            if any(m.id == record.id for m in self._replaced(later)):
                return later.number
        return 0

    def _not_live(self, record: CompactionRecord) -> str:
        merged = self._merged_into(record)
        if merged:
            return (
                f"Compaction {record.number}'s checkpoint was merged into compaction {merged}: "
                f"restore that one first (`/compaction restore {merged}`)."
            )
        return f"Compaction {record.number}'s checkpoint is no longer in the history."

    def _view(self, record: CompactionRecord) -> CompactionViewEvent:
        history = None if record.is_restored else self._restored(record, self.conversation.live())
        measure = self._measure(history) if history is not None else Measure()
        return CompactionViewEvent(
            compaction=record.id,
            number=record.number,
            messages=[m.to_dict() for m in self._replaced(record)],
            restored=record.is_restored,
            restorable=history is not None,
            merged_into=0
            if history is not None or record.is_restored
            else self._merged_into(record),
            tokens=measure.tokens,
            window=measure.window,
            compact_at=measure.compact_at,
            fits=measure.fits,
        )

    def _measure(self, history: list[Message]) -> Measure:
        """The next request of `history`, counted as the rail counts it (the wire form,
        the nudge the ladder would add, the tools)."""
        loop = self._loop()
        if loop is None:
            return Measure()
        schemas = loop.tools.schemas() if loop.tools is not None else []
        request = loop.context.next_request(
            model_messages(history),
            overhead_tokens=loop.overhead_tokens(),
            tools_offered=loop.tools is not None,
        )
        budget = loop.context.budget
        tokens = loop.counter.count_request(alternating(request), schemas)
        return Measure(tokens, budget.window, budget.compact_threshold)

    def _refuse(self, kind: ErrorKind, text: str) -> None:
        self._emit(ErrorEvent(kind, text))


def _restored_text(number: int, restored: int, measure: Measure) -> str:
    """The saved row: `restored 12 messages that compaction 1 replaced (ctx 1.4K/2K)`."""
    line = f"restored {restored} messages that compaction {number} replaced"
    if measure.window:
        line += f" (ctx {format_tokens(measure.tokens)}/{format_tokens(measure.window)})"
    if measure.window and not measure.fits:
        line += "\nabove the auto-compact mark: the next request compacts again"
    return line


def _unconfirmed_text(number: int, measure: Measure) -> str:
    if not measure.window:
        size = "Brim cannot count the restored history yet (the window is not known)"
    else:
        size = (
            f"The restored history would be {measure.tokens:,} tokens of a {measure.window:,} "
            f"window, past the auto-compact mark ({measure.compact_at:,}): the next request "
            "would compact it again"
        )
    return f"{size}. Send `/compaction restore {number} anyway` to restore it all the same."
