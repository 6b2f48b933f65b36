"""The three clients the answers benchmark compares, each a way of putting a conversation to
one engine at the same sampling:

- `brim`: Brim's whole path, the real ChatSession (the agent's system prompt, the memory
  section, counting, the ladder and its checkpoints), memory on, in a fresh home;
- `bare`: the model as its own template and default system prompt frame it (Brim sends no
  system message), the whole conversation every time, nothing dropped;
- `sliding`: Brim's system prompt and the newest messages that fit SLIDING_SHARE of the window
  (the oldest are dropped before each request; no checkpoint).

Each takes a provider that the benchmark keeps open across conversations (`KeptOpen`), so
that a conversation of one question does not load the model again.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AgentConfig
from engine.config.schema import FIELDS_BY_NAME
from engine.context.guided import is_compaction_request
from engine.events import CompactionEvent, ErrorEvent, Event
from engine.memory.replayed_scan import is_memory_replay
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.prompt import system_prompt
from engine.providers.base import ChatOptions, Provider, TextDelta
from engine.providers.errors import ProviderError
from engine.session import ChatSession

CLIENTS = ("brim", "bare", "sliding")
SLIDING_SHARE = 0.75  # the sliding window keeps the newest messages under this share

# The sampling every client answers with, read in this one place: greedy, so runs repeat.
# Each setting reaches Brim's path through the agent where the agent has that field, and the
# other two clients through ChatOptions where it has it (temperature today; the seed, top_p,
# top_k, min_p and repeat penalty as they become agent settings). At temperature 0 the seed
# does not change an answer; it is here for when the bench samples.
SAMPLING: dict[str, Any] = {"temperature": 0.0, "seed": 1234}


def sampled_agent(agent: AgentConfig) -> AgentConfig:
    """`agent` with the benchmark's sampling, for the settings an agent has."""
    return agent.with_changes(**{k: v for k, v in SAMPLING.items() if k in FIELDS_BY_NAME})


def request_options(agent: AgentConfig) -> ChatOptions:
    """The options the bare and sliding clients send: the agent's answer cap, and its
    sampling (the benchmark's, where the agent has no such field) as far as ChatOptions
    carries it."""
    carried = {f.name for f in dataclasses.fields(ChatOptions)}
    sampling = {k: getattr(agent, k, v) for k, v in SAMPLING.items() if k in carried}
    return ChatOptions(max_tokens=agent.max_tokens, **sampling)


class KeptOpen:
    """A provider's `aclose` made a no-op (a session closes its provider); `shut` closes it."""

    async def aclose(self) -> None:
        return None

    async def shut(self) -> None:
        await super().aclose()  # type: ignore[misc]


@dataclass
class Conversation:
    """What one client answered in one conversation."""

    answers: list[str] = field(default_factory=list)  # one per turn ("" where it failed)
    requests: list[list[Message]] = field(default_factory=list)  # what was sent, each turn
    compactions: int = 0
    errors: list[str] = field(default_factory=list)


Client = Callable[[Provider, AgentConfig, list[str]], Any]  # a coroutine of a Conversation


async def brim(provider: Provider, agent: AgentConfig, turns: list[str]) -> Conversation:
    """The turns through Brim's session, in a fresh home with memory on."""
    out = Conversation()
    events: list[Event] = []
    recorder = getattr(provider, "sent", None)
    with tempfile.TemporaryDirectory(prefix="brim-bench-answers-") as home:
        session = ChatSession(
            agent, BrimPaths.resolve(Path(home)), events.append, provider=provider, memory=True
        )
        await session.start()
        try:
            for n, text in enumerate(turns, start=1):
                mark = len(recorder) if recorder is not None else 0
                await session.send(text)
                _progress("brim", n, len(turns))
                out.answers.append(answer_after(session.history(), text))
                if recorder is not None:
                    out.requests.append(answering_request(recorder[mark:], text))
        finally:
            await session.close()
    out.compactions = sum(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events)
    out.errors = [f"{e.kind}: {e.message}" for e in events if isinstance(e, ErrorEvent)]
    return out


def answer_after(history: list[Message], text: str) -> str:
    """The assistant's text after the last user message that carries `text` ("" if none)."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "user" and text in message.content:
            after = history[index + 1 :]
            return "\n".join(m.content for m in after if m.role == "assistant" and m.content)
    return ""


def answering_request(sent: list[list[Message]], text: str) -> list[Message]:
    """Of the requests a turn sent, the last one whose last message carries the user's
    `text` and that neither a compaction nor memory sent."""
    for messages in reversed(sent):
        if not messages or messages[-1].role != "user" or text not in messages[-1].content:
            continue
        first = messages[0].content if messages[0].role == "system" else ""
        last = messages[-1].content
        if is_compaction_request(first, last) or is_memory_replay(last):
            continue
        return messages
    return []


async def bare(provider: Provider, agent: AgentConfig, turns: list[str]) -> Conversation:
    """The turns with no system message from Brim (the model's template frames them with its
    own default), the whole conversation every time."""
    return await _plain_client(provider, agent, turns, head=None, budget=None)


async def sliding(provider: Provider, agent: AgentConfig, turns: list[str]) -> Conversation:
    """The turns under Brim's system prompt, the oldest messages dropped to fit."""
    head = system(system_prompt(agent.system_prompt, workspace=None, tools=False))
    budget = int((agent.num_ctx or 0) * SLIDING_SHARE) or None
    return await _plain_client(provider, agent, turns, head=head, budget=budget)


async def _plain_client(
    provider: Provider,
    agent: AgentConfig,
    turns: list[str],
    *,
    head: Message | None,
    budget: int | None,
) -> Conversation:
    out = Conversation()
    count = _request_counter(provider, agent)
    history: list[Message] = []
    options = request_options(agent)
    for text in turns:
        history.append(user(text))
        if budget is not None:
            while len(history) > 1 and count([*_head(head), *history]) > budget:
                history.pop(0)
            while history and history[0].role != "user":
                history.pop(0)  # strict templates start with the user
        messages = [*_head(head), *history]
        parts: list[str] = []
        try:
            async for item in provider.stream_chat(agent.model, messages, options):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
        except ProviderError as exc:  # a bare conversation past the window: the engine refuses
            out.errors.append(f"{exc.kind}: {exc.message}")
        out.answers.append("".join(parts))
        out.requests.append(messages)
        history.append(assistant("".join(parts)))
        _progress("bare" if head is None else "sliding", len(out.answers), len(turns))
    return out


def _progress(client: str, turn: int, turns: int) -> None:
    if turns > 1:  # a conversation, not a single question
        print(f"answers:   {client} turn {turn}/{turns}", file=sys.stderr, flush=True)


def _head(head: Message | None) -> list[Message]:
    return [head] if head is not None else []


def _request_counter(provider: Provider, agent: AgentConfig) -> Callable[[list[Message]], int]:
    """The exact count of a request by the model's template (the sliding window's measure)."""
    tokenizer = getattr(provider, "tokenizer", None)
    if tokenizer is None:
        segment = getattr(provider, "segment_tokenizer", None)
        tokenizer = segment(agent.model) if segment is not None else None
    if tokenizer is None:
        raise RuntimeError(f"no exact tokenizer for {agent.model!r} on {provider.kind}")
    return tokenizer.count_request  # type: ignore[no-any-return]


CLIENT_RUNS: dict[str, Client] = {"brim": brim, "bare": bare, "sliding": sliding}
