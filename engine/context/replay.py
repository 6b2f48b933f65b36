"""Requests on the conversation the engine caches: the conversation exactly as last sent,
what came after it, then one instruction.

When the summarizer is the agent's own model on the same engine, compaction's checkpoint
request (and the memory extraction just before it, engine/memory/replayed_scan.py) is that
conversation plus an instruction: the engine finds the whole prefix in its KV cache and
evaluates little more than the instruction. `Replay` is what was last sent; `ReplayPrefix`
the part the requests built on it share; `replay_request` the checkpoint request, or None
when its answer would not have room in the window.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.context.budget import replay_margin, replay_min_answer
from engine.context.constants import SUMMARY_HEADINGS
from engine.context.history import CountMessage
from engine.context.ride import Joined, Ride
from engine.context.summarizer import SummaryRequest
from engine.messages import Message, alternating
from engine.resources import prompt


def fence(label: str, text: str) -> str:
    """`text` between two marker lines carrying a nonce from its own content, so nothing in
    it can close the fence."""
    nonce = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"<<<{label} {nonce}>>>\n{text.strip()}\n<<<END {label} {nonce}>>>"


@dataclass(frozen=True)
class Replay:
    """The conversation exactly as it was last sent (the wire form), its tool schemas and
    its size by the engine's count (tools and framing included)."""

    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]
    tokens: int
    at: float = 0.0  # when it was sent: history messages created since came after it

    def newer(self, history: Sequence[Message]) -> list[Message]:
        """The history's messages that arrived after the request was sent (its answer,
        tool results, the next user message): they follow the replayed prefix."""
        return [m for m in history if m.created >= self.at and m.kind == "chat"]


# The replayed form's instruction, after the conversation as last sent; it starts with
# REPLAY_MARK. `{headings}`, `{words}` and `{around}` are filled in.
REPLAY_INSTRUCTION = prompt("checkpoint_replay")
ALONE = "nothing before or after"
RIDDEN = "nothing before them"  # another instruction follows (engine/context/ride.py)


def checkpoint_instruction(max_tokens: int, work_state: str | None, rider: str = "") -> str:
    """The checkpoint instruction for an answer of `max_tokens`, then `rider` (another
    job's instruction, answered after the checkpoint) where one rides along."""
    words = max(100, int(max_tokens * 0.6))
    instruction = REPLAY_INSTRUCTION.format(
        headings="\n".join(SUMMARY_HEADINGS), words=words, around=RIDDEN if rider else ALONE
    )
    if work_state and work_state.strip():
        instruction += (
            "\n\nThe recorded work state (do not restate it; cover what the conversation "
            "adds):\n" + fence("WORK STATE", work_state)
        )
    return f"{instruction}\n\n{rider}" if rider else instruction


def replay_messages(
    replay: Replay, instruction: str, newer: Sequence[Message] = ()
) -> list[Message]:
    """The last-sent conversation, what came after it, then `instruction`, as the wire
    joins them: the engine's cache holds the first part, so only the rest is evaluated."""
    return alternating([*replay.messages, *newer, Message(role="user", content=instruction)])


def replay_request(
    replay: Replay,
    *,
    window: int,
    max_tokens: int,
    work_state: str | None,
    count_message: CountMessage,
    newer: Sequence[Message] = (),
    rider: Joined | None = None,
) -> tuple[SummaryRequest, list[Message]] | None:
    """The checkpoint request on the cached conversation and the newer messages it carries,
    or None when the answer would not have room in the window (then the transcript form,
    which is fitted, is used).

    With `rider` (memory's instruction, engine/context/ride.py) the request asks for both,
    its answer cap is the checkpoint's plus the rider's, and it carries every newer message
    (the prefix the rider's own request was built on); None when that does not fit."""
    instruction = checkpoint_instruction(
        max_tokens, work_state, rider.instruction if rider is not None else ""
    )
    cost = count_message(Message(role="user", content=instruction))
    after = sum(count_message(m) for m in newer)
    room = window - replay.tokens - cost - replay_margin(window)
    shortest = min(max_tokens, replay_min_answer(window))
    if rider is not None:
        room -= rider.max_tokens
        if room - after < shortest:
            return None
        request = SummaryRequest(
            messages=replay_messages(replay, instruction, newer),
            max_tokens=min(max_tokens, room - after) + rider.max_tokens,
            tools=replay.tools,
        )
        return request, list(newer)
    if room - after >= shortest:
        out, kept = min(max_tokens, room - after), list(newer)
    elif room >= shortest:
        # What came after the last request is the newest part of the history, which the
        # rebuild keeps verbatim anyway: left out, the cached conversation still fits.
        out, kept = min(max_tokens, room), []
    else:
        return None
    request = SummaryRequest(
        messages=replay_messages(replay, instruction, kept), max_tokens=out, tools=replay.tools
    )
    return request, kept


@dataclass(frozen=True)
class ReplayPrefix:
    """What a request on the cached conversation starts with, before its instruction: the
    conversation as last sent (`replay`) and the newer messages the checkpoint request
    carries after it (`newer`). A request built on it (`messages`) and the checkpoint
    request share this whole prefix, so the engine evaluates only their instructions."""

    replay: Replay
    newer: tuple[Message, ...] = ()
    # Where a request built on the prefix may ride the checkpoint request instead of being
    # sent on its own (engine/context/ride.py); None: it is sent on its own.
    ride: Ride | None = field(default=None, compare=False)

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """The tool schemas the conversation was sent with: a replayed request carries them
        too, or the engine's cached prefix no longer matches."""
        return self.replay.tools

    def messages(self, instruction: str) -> list[Message]:
        """The prefix, then `instruction` as the last user message (`replay_messages`)."""
        return replay_messages(self.replay, instruction, self.newer)
