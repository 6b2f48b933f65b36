"""The summarizer's side of compaction: what it is asked, what it answers, and how a
compaction request is told from the agent's own.

The summarizer is injected (`Summarize`), so the same requests go to the agent's model, a
separate summarizer model or a test double. The prompts are files under resources/prompts/.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.messages import Message
from engine.resources import prompt

# The fenced-transcript form's system prompt; `{headings}` and `{words}` are filled in.
SUMMARIZER_SYSTEM = prompt("checkpoint_system")
# The guided form's system prompt: one question about the transcript per request.
GUIDED_SYSTEM = prompt("guided_system")

# Every replayed compaction request ends with one of these; benchmarks and tests tell the
# summarizer's requests from the agent's by them.
REPLAY_MARK = "[Brim compaction]"
REPLAY_QUESTION_MARK = "[Brim compaction question]"


@dataclass(frozen=True)
class SummaryRequest:
    """What the summarizer is asked: send `messages` as one chat request with `max_tokens`."""

    messages: list[Message]
    max_tokens: int
    stop: tuple[str, ...] = ()  # generation ends at the first of these
    # The tool schemas the conversation was last sent with: a request that replays that
    # conversation carries them too, or the engine's cached prefix no longer matches.
    tools: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class SummaryResult:
    text: str
    finish_reason: str | None = None  # "length" means cut off at max_tokens: refused


Summarize = Callable[[SummaryRequest], Awaitable[SummaryResult]]


def is_compaction_request(first: str, last: str) -> bool:
    """Whether a chat request (its first and last messages' text) is one compaction sends,
    in either form: the fenced transcript (its own system prompt) or the replayed
    conversation (the instruction after it). For benchmarks, doubles and logs."""
    if first == GUIDED_SYSTEM or first.startswith(SUMMARIZER_SYSTEM[:60]):
        return True
    return REPLAY_MARK in last or REPLAY_QUESTION_MARK in last
