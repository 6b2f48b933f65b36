"""The memory-extractor sub-run: scan a slice of a conversation and queue what the user
stated that is worth remembering.

Two passes, both through the real memory tools' checks, every write queued for review:

- the deterministic pass first (engine/memory/statements.py): the user's explicit
  first-person statements ("My name is Alex.", "I always use tabs"), each quoting its
  exact sentence. It needs no model, so memory suggests something on any model;
- then the model. Before a compaction that replays the conversation as last sent (the
  summarizer is the agent's own model on the same engine), it is asked on that cached
  conversation, one short instruction after it, for JSON only
  (engine/memory/replayed_scan.py): the engine evaluates the instruction alone. Otherwise
  (another summarizer model, nothing sent yet, a replay that does not fit the window,
  `/learn` and the reflection) it runs on the summarizer model with a throwaway prompt of
  its own: a context block (the prior summary, the later messages, the already-reflected
  earlier ones; carrying no source IDs, so nothing in it can be quoted), the memory index,
  and the scanned slice with a source ID on each authenticated user message
  (engine/memory/transcript.py). Where the window has room for them it gets view_memory,
  manage_memory and propose_lesson in queue mode (delete and rename refused); small local
  models often cannot call tools, so it may always answer in plain JSON instead, and on a
  small window it is asked for JSON only, with a short prompt. A model suggestion for a
  sentence the first pass queued replaces that suggestion (the model may word it better);
  nothing is suggested twice.

Either way, only an exact span of an authenticated user message of the scanned slice can be
quoted (engine/memory/sources.py): what else the model read is never a source.

Every request fits the window with its answer (engine/memory/sizing.py): the transcript is
sized from the room the frame leaves, and `max_tokens` from what the prompt leaves. A
`Meter` (engine/memory/requests.py) bounds and counts the requests: a compaction's
extraction sends one.

A model's answer in plain JSON goes through the same checks (engine/memory/json_answers.py).
The learn pass's curation call is engine/memory/curation.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.context.replay import ReplayPrefix
from engine.memory.json_answers import apply_json_answer
from engine.memory.layout import Scope
from engine.memory.replayed_scan import INDEX_SHARE as REPLAY_INDEX_SHARE
from engine.memory.replayed_scan import ReplayedScan, replayed_request
from engine.memory.requests import BudgetSpent, Complete, Meter
from engine.memory.service import MemoryService
from engine.memory.sizing import (
    MIN_TRANSCRIPT_TOKENS,
    TOOLS_SHARE,
    CountRequest,
    CountText,
    Room,
    approximate,
)
from engine.memory.sources import SourceSet
from engine.memory.statements import STATEMENTS_ID, queue_statements
from engine.memory.tools import MemoryToolState, memory_tools, render_listing
from engine.memory.transcript import (
    ScanInput,
    build_context_block,
    render_slices,
)
from engine.messages import Message, assistant, system, tool_result, user
from engine.resources import prompt as load_prompt
from engine.tools.context import ToolContext
from engine.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

EXTRACTOR_ID = "memory-extractor"
CONTEXT_SHARE = 0.25  # of the room a transcript has, at most, for the context block
CONTEXT_MIN_ROOM = 600  # with less room than this for the transcript, no context block
MAX_STEPS = 6
INDEX_SHARE = 0.15  # of the window, at most, for the memory index


@dataclass
class ScanReport:
    """What one pass queued, refused and skipped, and the requests it sent."""

    queued: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: str = ""
    steps: int = 0
    dropped: int = 0  # messages of the slice left out because they did not fit
    statements: int = 0  # of `queued`, how many the deterministic pass queued
    replayed: bool = False  # the model was asked on the replayed conversation
    rode: bool = False  # ... in compaction's checkpoint request (engine/context/ride.py)
    meter: Meter | None = None  # the model requests it sent, and what they cost


# The prompts (resources/prompts/): `{actor}` is filled in, doubled braces are literal.
EXTRACTOR_SYSTEM = load_prompt("memory_extractor")
# For a window too small for the tools and the full prompt: JSON only, a short prompt.
EXTRACTOR_COMPACT = load_prompt("memory_extractor_compact")


async def run_scan(
    inp: ScanInput,
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    count_text: CountText,
    window: int,
    count_request: CountRequest | None = None,
    actor: str = EXTRACTOR_ID,
    replay: ReplayPrefix | None = None,
    meter: Meter | None = None,
) -> ScanReport:
    """Scan one slice and queue what qualifies: the deterministic pass, then the model. A
    slice with no authenticated user message is skipped without a model call. Every
    request fits `window` with its answer, counted by `count_request` (by default, from
    `count_text`).

    `replay` (a compaction's, engine/context/compaction.py) asks the model on the
    conversation the engine has cached when that request fits (engine/memory/
    replayed_scan.py); without it, or when it does not fit, the slice is read as a
    transcript. What may be quoted is the slice's user messages either way.

    `meter` bounds and counts the model's requests (a compaction's allows one): within its
    limit the model reads the first parts of the slice (engine/memory/transcript.py), the
    first pass all of it."""
    report = ScanReport(meter=meter if meter is not None else Meter())
    sources = SourceSet(inp.conversation_id, inp.chunk)
    if not len(sources):
        report.skipped = "no authenticated user message in the scanned messages"
        return report
    found = scan_statements(inp.conversation_id, inp.chunk, service, scopes)
    read: list[Message] = list(inp.chunk)  # what the model is shown: a lesson repeats none
    state = MemoryToolState(
        service,
        scopes,
        lambda: sources,
        "queue",
        actor=actor,
        conversation_id=inp.conversation_id,
        untrusted=lambda: read,
        replaceable=frozenset(found),
    )
    room = Room(window, count_request or approximate(count_text))
    assert report.meter is not None
    complete = report.meter.wrap(complete, room.count)
    try:
        replayed = None
        if replay is not None:
            index = _memory_index(service, scopes, count_text, int(window * REPLAY_INDEX_SHARE))
            replayed = await replayed_request(
                replay, sources=sources, actor=actor, index=index, room=room
            )
        if replayed is not None:
            # The model reads the whole conversation: no tool result in it makes a lesson.
            read.extend(m for m in replayed.messages if m.role == "tool")
            await _replayed_pass(state, replayed, complete, report)
        else:
            if replay is not None:
                log.info("memory: the replayed conversation leaves no room; reading a transcript")
            await _model_pass(inp, state, sources, room, count_text, complete, actor, report)
    except BudgetSpent:
        log.info("memory: %s stopped: its request budget is spent", actor)
    finally:
        waiting = {s.id for s in service.queue.pending()}
        report.queued = [i for i in [*found, *state.queued] if i in waiting]
        report.statements = sum(1 for i in found if i in waiting)
        report.refused = list(state.refused)
    return report


def scan_statements(
    conversation_id: str, messages: Sequence[Message], service: MemoryService, scopes: list[Scope]
) -> list[str]:
    """The deterministic pass alone (no model): the IDs it queued from `messages`."""
    sources = SourceSet(conversation_id, messages)
    state = MemoryToolState(
        service,
        scopes,
        lambda: sources,
        "queue",
        actor=STATEMENTS_ID,
        conversation_id=conversation_id,
    )
    return queue_statements(state, sources)


def _memory_index(
    service: MemoryService, scopes: list[Scope], count_text: CountText, budget: int
) -> str:
    """What memory holds, cut to `budget` tokens; "" when it holds nothing."""
    found, _ = service.store.entries(scopes)
    if not found:
        return ""
    return _fit_text(render_listing(service, scopes), count_text, budget)


async def _replayed_pass(
    state: MemoryToolState, scan: ReplayedScan, complete: Complete, report: ScanReport
) -> None:
    """The model's scan on the replayed conversation: one request, or a part of compaction's
    checkpoint request where it rides it (engine/context/ride.py); its JSON answer goes
    through the same checks as every write (no source IDs were shown). Tool calls are not
    run: the conversation's tools are offered only so that its cached prefix matches."""
    report.replayed = True
    report.steps += 1
    text = await scan.ride.join(scan.rider, scan.max_tokens) if scan.ride is not None else None
    if text is None:  # not carried by the checkpoint request: asked on its own
        answer = await complete(scan.messages, scan.tools, scan.max_tokens)
        if answer.calls:
            log.info("memory: the replayed extraction called tools; only its text is read")
        text = answer.text
    else:
        report.rode = True
    registry = ToolRegistry(memory_tools(state))
    ctx = ToolContext(workspace=state.service.root)
    await apply_json_answer(state, text, registry, ctx, sourced=False)


async def _model_pass(
    inp: ScanInput,
    state: MemoryToolState,
    sources: SourceSet,
    room: Room,
    count_text: CountText,
    complete: Complete,
    actor: str,
    report: ScanReport,
) -> None:
    """The model's scan: the frame that fits (with the tools where there is room), then the
    slice in as few transcripts as fit beside it."""
    registry = ToolRegistry(memory_tools(state))
    ctx = ToolContext(workspace=state.service.root)
    index = _fit_text(
        render_listing(state.service, state.scopes), count_text, int(room.window * INDEX_SHARE)
    )
    head = [f"Memory index:\n{index}"]
    system_text = EXTRACTOR_SYSTEM.format(actor=actor)
    schemas = registry.schemas()
    with_tools = await _frame(room, system_text, head, schemas)
    # No room for the tools, or a model whose template drops them (the engine counts them
    # as nothing): JSON only, with the short prompt.
    if with_tools > TOOLS_SHARE * room.window or with_tools <= await _frame(
        room, system_text, head, []
    ):
        system_text, schemas = EXTRACTOR_COMPACT.format(actor=actor), []
    frame = await _frame(room, system_text, head, schemas)
    space = room.transcript_room(frame)
    context = ""
    if space >= CONTEXT_MIN_ROOM:
        context = build_context_block(inp, count_text, int(space * CONTEXT_SHARE))
    if context:
        head.append(
            "Context block (no source IDs: never quote from it):\n"
            f"<<<CONTEXT\n{context}\nCONTEXT>>>"
        )
        frame = await _frame(room, system_text, head, schemas)
    budget = room.transcript_room(frame)
    if budget < MIN_TRANSCRIPT_TOKENS:
        report.skipped = f"a {room.window:,}-token window leaves no room for the extractor"
        log.info("memory: %s", report.skipped)
        return
    for _ in range(4):
        transcripts, report.dropped = render_slices(inp.chunk, sources, count_text, budget)
        prompts = [_scan_prompt(head, t) for t in transcripts]
        outputs = [await room.output_for(_opening(system_text, p), schemas) for p in prompts]
        if all(outputs):
            break
        budget = int(budget * 0.8)  # the count of a whole request ran above the estimate
    else:
        report.skipped = "the scanned messages do not fit the window beside the prompt"
        log.info("memory: %s", report.skipped)
        return
    if report.dropped:
        log.info("memory: %d messages of the slice were not scanned", report.dropped)
    left = report.meter.left if report.meter is not None else None
    if left is not None and len(prompts) > left:
        # Within the budget, the first parts (each as full as the window allows); the first
        # pass read every user message of the slice.
        log.info(
            "memory: the model reads %d of %d parts (its request budget); the rest had the "
            "first pass only",
            left,
            len(prompts),
        )
        prompts = prompts[:left]
    for prompt in prompts:
        await _converse(state, registry, ctx, complete, room, system_text, prompt, schemas, report)


async def _frame(
    room: Room, system_text: str, head: list[str], schemas: list[dict[str, Any]]
) -> int:
    """What a scan request costs before its transcript."""
    return await room.count(_opening(system_text, _scan_prompt(head, "")), schemas)


def _opening(system_text: str, prompt: str) -> list[Message]:
    return [system(system_text), user(prompt)]


def _scan_prompt(head: list[str], transcript: str) -> str:
    return "\n\n".join(
        [
            *head,
            "The part of the conversation to scan (quote only the user messages marked "
            f"with a source ID):\n<<<SCAN\n{transcript}\nSCAN>>>",
            "Suggest what qualifies, or nothing.",
        ]
    )


def _fit_text(text: str, count_text: CountText, budget: int) -> str:
    """`text` cut (at a line) to at most `budget` tokens."""
    if count_text(text) <= budget:
        return text
    lines = text.splitlines()
    while lines and count_text("\n".join(lines) + "\n[…]") > budget:
        lines.pop()
    return "\n".join([*lines, "[…]"]) if lines else ""


async def _converse(
    state: MemoryToolState,
    registry: ToolRegistry,
    ctx: ToolContext,
    complete: Complete,
    room: Room,
    system_text: str,
    prompt: str,
    schemas: list[dict[str, Any]],
    report: ScanReport,
) -> None:
    """One extractor conversation: tool calls until a text answer (the JSON fallback), each
    request sized to the window; it ends when the window has no room for another step."""
    messages = _opening(system_text, prompt)
    for _ in range(MAX_STEPS):
        max_tokens = await room.output_for(messages, schemas)
        if not max_tokens:
            log.info("memory: the extractor's conversation stopped: the window is full")
            return
        report.steps += 1
        answer = await complete(messages, schemas, max_tokens)
        if answer.calls:
            messages.append(assistant(answer.text, answer.calls))
            for call in answer.calls:
                outcome = await registry.call(call.name, call.arguments, ctx, call_id=call.id)
                messages.append(tool_result(call, outcome.content))
            continue
        await apply_json_answer(state, answer.text, registry, ctx)
        return
