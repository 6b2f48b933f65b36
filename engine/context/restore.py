"""Undoing a compaction: the history with the checkpoint taken out and what it replaced put
back where it stood.

A compaction rebuilds `[head, checkpoint, continuation, tail]`; restoring it removes the
checkpoint and its continuation note and puts the replaced messages (an earlier checkpoint
it merged among them) back in the order the history had before the compaction ran. What
came after the compaction stays after it, in its order. Only a checkpoint that is still
live can be undone: one that a later compaction merged is restored by restoring that one
first (which brings it back).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.messages import Message


def compaction_span(
    before: Sequence[Message], after: Sequence[Message]
) -> tuple[str | None, list[str]]:
    """The checkpoint a rewrite brought (None: no compaction) and the ids of the messages
    of `before` it took out, in order (notices are not the model's and are not counted)."""
    had = {m.id for m in before}
    checkpoint = next((m.id for m in after if m.kind == "summary" and m.id not in had), None)
    if checkpoint is None:
        return None, []
    kept = {m.id for m in after}
    return checkpoint, [m.id for m in before if m.id not in kept and not m.is_notice]


def checkpoint_is_live(live: Sequence[Message], checkpoint_id: str) -> bool:
    return any(m.kind == "summary" and m.id == checkpoint_id for m in live)


def restored_history(
    live: Sequence[Message],
    checkpoint_id: str,
    replaced: Sequence[Message],
    order: Sequence[str],
) -> list[Message] | None:
    """`live` with the checkpoint `checkpoint_id` undone, or None when it is not live.

    `replaced` are the messages the compaction took out, `order` the message ids of the
    history just before it ran (the merge key; anything newer goes after, as it came)."""
    at = next(
        (i for i, m in enumerate(live) if m.kind == "summary" and m.id == checkpoint_id), None
    )
    if at is None:
        return None
    head = list(live[:at])
    rest = list(live[at + 1 :])
    if rest and rest[0].kind == "continuation":
        rest = rest[1:]  # the note that followed the checkpoint goes with it
    present = {m.id for m in live}
    segment = [m for m in replaced if m.id not in present] + rest
    position = {message_id: index for index, message_id in enumerate(order)}
    late = len(position)
    ranked = sorted(enumerate(segment), key=lambda item: (position.get(item[1].id, late), item[0]))
    return head + [message for _, message in ranked]
