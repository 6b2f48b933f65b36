"""The memory extraction before a compaction, asked on the conversation the engine caches.

When compaction replays the conversation as last sent (its summarizer is the agent's own
model on the same engine: `ReplayPrefix`, engine/context/compaction.py), the extraction just
before it asks on that same prefix: the conversation exactly as last sent, the newer messages
the checkpoint request carries, then one instruction (resources/prompts/
memory_extractor_replay.txt, starting with `MEMORY_REPLAY_MARK`). The engine finds the prefix
in its cache and evaluates the instruction alone, where the transcript form
(engine/memory/transcript.py) is a prompt of its own, evaluated whole; the checkpoint
request after it shares the same prefix. The conversation's tool schemas are sent as they
were (the prefix must match), and the answer is JSON only: tool calls are not run.

Where compaction asks for the free-form checkpoint on that prefix, the extraction rides the
checkpoint request instead of being sent on its own (engine/context/ride.py): one request
carries the checkpoint instruction, then this one's (resources/prompts/
memory_extractor_rider.txt), and the answer's part after its "Memory:" line is this
request's answer. Where both answers do not fit, it is sent on its own as before.

What the model may quote is not widened by what it reads: its answer goes through the same
checks against the slice being compacted (the scan's `SourceSet`), so only an exact span of
an authenticated user message of that slice is queued; a tool result, the assistant's text
or the tail, all in the conversation the model read, never are. The request carries no
source IDs, so a quote is matched in any user message of the slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.context.replay import ReplayPrefix
from engine.context.ride import Ride
from engine.memory.sizing import Room
from engine.memory.sources import SourceSet
from engine.messages import Message
from engine.resources import prompt as load_prompt

# Every replayed memory request's instruction starts with this: benchmarks and tests tell
# it from the agent's requests (whose system prompt it follows) by it.
MEMORY_REPLAY_MARK = "[Brim memory]"
# `{actor}` and `{memory}` (the memory index block, or nothing) are filled in.
EXTRACTOR_REPLAY = load_prompt("memory_extractor_replay")
INDEX_SHARE = 0.05  # of the window, at most, for the memory index (evaluated anew each time)
# The same request riding compaction's checkpoint request (engine/context/ride.py): answered
# after the checkpoint, under a line "Memory:". `{memory}` is filled in.
EXTRACTOR_RIDER = load_prompt("memory_extractor_rider")


@dataclass(frozen=True)
class ReplayedScan:
    """One replayed extraction request, sized to the window with its answer."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    max_tokens: int
    rider: str = ""  # the instruction where it rides the checkpoint request instead
    ride: Ride | None = None  # where it may (the prefix's), None: it is sent on its own


def replay_instruction(actor: str, index: str = "") -> str:
    """The instruction after the replayed conversation; `index` (what memory holds, already
    capped) is shown so that nothing saved is suggested again."""
    memory = f"\n\nAlready in memory (do not suggest it again):\n{index}\n" if index else ""
    return EXTRACTOR_REPLAY.format(actor=actor, memory=memory)


def rider_instruction(index: str = "") -> str:
    """The instruction where it rides the checkpoint request: the same facts asked for,
    answered after the checkpoint."""
    memory = f"\n\nAlready in memory (do not suggest it again):\n{index}\n" if index else ""
    return EXTRACTOR_RIDER.format(memory=memory)


def is_memory_replay(last: str) -> bool:
    """Whether a request's last message (its text) is a replayed memory extraction's."""
    return MEMORY_REPLAY_MARK in last


async def replayed_request(
    prefix: ReplayPrefix, *, sources: SourceSet, actor: str, index: str, room: Room
) -> ReplayedScan | None:
    """The replayed request that fits `room` with its answer, or None (then the transcript
    form runs). Tried in turn: the whole prefix with the memory index; without the index;
    then, only when the newer messages hold no user message of the slice (nothing the model
    could quote is hidden from it), the conversation as last sent alone, which the engine
    still has cached."""
    tools = list(prefix.tools)
    prefixes = [prefix]
    if prefix.newer and not any(sources.tag_for(m) is not None for m in prefix.newer):
        prefixes.append(ReplayPrefix(prefix.replay))
    indexes = [index, ""] if index else [""]
    for candidate in prefixes:
        for shown in indexes:
            messages = candidate.messages(replay_instruction(actor, shown))
            max_tokens = await room.output_for(messages, tools)
            if max_tokens:
                return ReplayedScan(
                    messages, tools, max_tokens, rider_instruction(shown), candidate.ride
                )
    return None
