"""Shared builders for the memory tests: queued suggestions made through the real checks."""

from __future__ import annotations

from engine.memory import MemoryService, MemoryToolState, SourceSet
from engine.memory.queue import Suggestion
from engine.memory.statements import STATEMENTS_ID
from engine.memory.tools import plan_fact, plan_lesson, queue_fact, queue_lesson
from engine.messages import Message, user


def by_model(service: MemoryService) -> list[Suggestion]:
    """The waiting suggestions the model made (the deterministic pass's aside: it queues the
    user's own first-person statements, whatever the model does)."""
    return [s for s in service.pending() if s.by != STATEMENTS_ID]


def queue_facts(
    service: MemoryService, sentences: list[str], *, conversation: str = "conv-1"
) -> list[Suggestion]:
    """One fact suggestion per sentence, each quoting its own user message (through the same
    checks the extractor's writes pass)."""
    messages: list[Message] = [user(s) for s in sentences]
    sources = SourceSet(conversation, messages)
    state = MemoryToolState(
        service, service.scopes("default", None), lambda: sources, "queue", actor="test"
    )
    out = []
    for i, sentence in enumerate(sentences):
        plan = plan_fact(
            state,
            action="create",
            scope="global",
            subject=f"fact-{i}",
            content=sentence,
            quote=sentence,
            source=None,
            require_view=False,
        )
        out.append(queue_fact(state, plan))
    return out


def queue_lesson_for(service: MemoryService, subject: str, text: str) -> Suggestion:
    state = MemoryToolState(
        service, service.scopes("default", None), lambda: SourceSet("c", ()), "queue"
    )
    return queue_lesson(state, plan_lesson(state, scope="agent", subject=subject, content=text))


def sentences(n: int) -> list[str]:
    return [f"I always want preference number {i} in my projects." for i in range(n)]
