"""Undoing a compaction: the history with the checkpoint taken out and what it replaced put
back where it stood.

A compaction rebuilds `[head, checkpoint, continuation, tail]`, or, for an engine that
reuses kept messages where they now stand, lays the checkpoint inside the tail, before the
current request. Restoring it removes the checkpoint and its continuation note and puts
the replaced messages (an earlier checkpoint it merged among them) back in the order the
history had before the compaction ran. What came after the compaction stays after it, in
its order. Only a checkpoint that is still live can be undone: one that a later compaction
merged is restored by restoring that one first (which brings it back).
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


def replaced_for_reading(before: Sequence[Message], after: Sequence[Message]) -> list[Message]:
    """The messages of `before` that a compaction took out, as a person counts them: the
    Show / Restore view lists these, and the receipt row says how many (notices are not the
    model's, and the continuation note is Brim's own)."""
    kept = {m.id for m in after}
    return [m for m in before if m.id not in kept and not m.is_notice and m.kind != "continuation"]


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
    rest = list(live[at + 1 :])
    if rest and rest[0].kind == "continuation":
        rest = rest[1:]  # the note that followed the checkpoint goes with it
    present = {m.id for m in live}
    # The checkpoint may stand after kept messages (laid for an engine that reuses them
    # there), so what precedes it is put back in order too, not only what follows it.
    before = list(live[:at]) + [m for m in replaced if m.id not in present]
    segment = before + rest
    position = {message_id: index for index, message_id in enumerate(order)}
    late = len(position)
    keys: list[int] = []
    for index, message in enumerate(segment):
        known = position.get(message.id)
        if known is None:  # newer than the compaction, or kept where it stood ahead of it
            known = late if index >= len(before) else (keys[-1] if keys else -1)
        keys.append(known)
    ranked = sorted(enumerate(segment), key=lambda item: (keys[item[0]], item[0]))
    return [message for _, message in ranked]
