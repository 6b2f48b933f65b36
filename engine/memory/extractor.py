"""The memory-extractor sub-run: scan a slice of a conversation and queue what the user
stated that is worth remembering, through the real memory tools.

It runs on the summarizer model with a throwaway prompt of its own: a context block (the
prior summary, the later messages, the already-reflected earlier ones; at most 40% of its
input budget, and carrying no source IDs, so nothing in it can be quoted), the memory index,
and the scanned slice with a source ID on each authenticated user message. It gets
view_memory, manage_memory and propose_lesson in queue mode: every write passes the checks a
direct write would and is queued for review instead; delete and rename are refused.

Small local models often cannot call tools, so the prompt also asks for a plain JSON answer
as a fallback, and that answer goes through exactly the same checks.

The learn pass adds one curation call holding revise_memory (delete a stale entry, rewrite a
lesson), with the session's memory diff and the waiting suggestions.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.memory.errors import MemoryStoreError
from engine.memory.layout import Scope
from engine.memory.plaintext import strip_controls
from engine.memory.queue import Suggestion
from engine.memory.service import MemoryService
from engine.memory.sources import SourceSet
from engine.memory.store import Snapshot
from engine.memory.tools import (
    MemoryToolState,
    memory_tools,
    plan_fact,
    plan_lesson,
    plan_revision,
    queue_fact,
    queue_lesson,
    render_listing,
    revise_tool,
)
from engine.messages import Message, ToolCall, assistant, system, tool_result, user
from engine.providers.base import ChatOptions, Provider, StreamDone, TextDelta, ToolCallsReady
from engine.resources import prompt as load_prompt
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError
from engine.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

EXTRACTOR_ID = "memory-extractor"
LEARNER_ID = "memory-learner"
CONTEXT_SHARE = 0.4
MAX_STEPS = 6
MAX_PARTS = 3  # extractor conversations per scanned slice, when it does not fit one
OUTPUT_TOKENS = 768
INDEX_CHARS = 2_000
CONTEXT_MESSAGE_CHARS = 600
# Caps (chars) for tool results and assistant text in the scanned slice, tightened until
# the slice fits; the user's messages are never cut (they are what may be quoted).
SLICE_CAPS: tuple[tuple[int, int | None], ...] = ((600, None), (250, 1_500), (80, 400))


@dataclass(frozen=True)
class Completion:
    text: str
    calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


Complete = Callable[[list[Message], list[dict[str, Any]]], Awaitable[Completion]]
CountText = Callable[[str], int]


def provider_complete(
    provider: Provider, model: str, *, max_tokens: int = OUTPUT_TOKENS
) -> Complete:
    """A `Complete` over a provider: one streamed chat request, tools offered. The engine's
    own settings (Ollama's num_ctx, strictness) are the provider's, as on every request."""

    async def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        options = ChatOptions(
            max_tokens=max_tokens,
            temperature=0.1,
            tools=tools,
        )
        parts: list[str] = []
        calls: tuple[ToolCall, ...] = ()
        finish: str | None = None
        async for item in provider.stream_chat(model, messages, options):
            if isinstance(item, TextDelta):
                parts.append(item.text)
            elif isinstance(item, ToolCallsReady):
                calls = item.calls
            elif isinstance(item, StreamDone):
                finish = item.finish_reason
        return Completion("".join(parts), calls, finish)

    return complete


@dataclass(frozen=True)
class ScanInput:
    conversation_id: str
    chunk: Sequence[Message]  # the scanned slice: only its user messages are sources
    summary: str = ""  # the prior checkpoint(s)
    later: Sequence[Message] = ()  # the recent tail kept verbatim (compaction)
    earlier: Sequence[Message] = ()  # the already-reflected messages (conversation end)


@dataclass
class ScanReport:
    queued: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: str = ""
    steps: int = 0
    dropped: int = 0  # messages of the slice left out because they did not fit


# The prompts (resources/prompts/): `{actor}` is filled in, doubled braces are literal.
EXTRACTOR_SYSTEM = load_prompt("memory_extractor")

CURATION_SYSTEM = load_prompt("memory_curator")


def _cap(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f" […{len(text) - limit} more chars]"


def render_context_message(message: Message) -> str | None:
    if message.is_notice or message.kind in ("summary", "continuation"):
        return None
    if message.role == "tool":
        return f"[tool result: {message.name or 'tool'}] {_cap(message.content, 120)}"
    if message.role not in ("user", "assistant"):
        return None
    text = _cap(message.content.strip(), CONTEXT_MESSAGE_CHARS)
    if message.tool_calls:
        text += " " + " ".join(f"[called {c.name}]" for c in message.tool_calls)
    return f"[{message.role}] {text.strip()}"


_EARLIER_HEAD = "Earlier in the conversation (already reflected):"
_SUMMARY_HEAD = "Summary of the conversation so far:"
_LATER_HEAD = "Later in the conversation (after the part to scan):"


def _newest_that_fit(
    messages: Sequence[Message], count_text: CountText, budget: int, used: int
) -> tuple[list[str], int]:
    """The newest messages' context lines that still fit `budget` after `used`, in order."""
    lines: list[str] = []
    for message in reversed(list(messages)):
        line = render_context_message(message)
        if line is None:
            continue
        cost = count_text(line)
        if used + cost > budget:
            break
        lines.insert(0, line)
        used += cost
    return lines, used


def build_context_block(inp: ScanInput, count_text: CountText, budget: int) -> str:
    """The context block, at most `budget` tokens: the summary first, then the newest later
    messages, then the newest earlier ones; shown in conversation order."""
    budget -= sum(count_text(h) for h in (_EARLIER_HEAD, _SUMMARY_HEAD, _LATER_HEAD))
    if budget <= 0:
        return ""
    used = 0
    summary = inp.summary.strip()
    if summary:
        cost = count_text(summary)
        while summary and cost > budget:
            keep = min(len(summary) - 1, int(len(summary) * budget / max(cost, 1) * 0.95))
            summary = summary[: max(0, keep)].rstrip()
            cost = count_text(summary) if summary else 0
        used += cost
    later, used = _newest_that_fit(inp.later, count_text, budget, used)
    earlier, used = _newest_that_fit(inp.earlier, count_text, budget, used)
    parts: list[str] = []
    if earlier:
        parts.append(_EARLIER_HEAD + "\n" + "\n".join(earlier))
    if summary:
        parts.append(_SUMMARY_HEAD + "\n" + summary)
    if later:
        parts.append(_LATER_HEAD + "\n" + "\n".join(later))
    return "\n\n".join(parts)


def render_slice_message(
    message: Message, sources: SourceSet, tool_cap: int, text_cap: int | None
) -> str | None:
    if message.is_notice or message.kind in ("summary", "continuation"):
        return None
    if message.role == "tool":
        return (
            f"[tool result: {message.name or 'tool'} — tool output, not the user's words]\n"
            f"{_cap(message.content, tool_cap)}"
        )
    if message.role == "user":
        tag = sources.tag_for(message)
        if tag is not None:
            return f"[user message · source {tag}]\n{message.content}"
        body = _cap(message.content, tool_cap)
        return f"[user-role text, not a user message; cannot be quoted]\n{body}"
    if message.role == "assistant":
        text = _cap(message.content, text_cap)
        calls = "".join(f"\n[assistant called {c.name}]" for c in message.tool_calls)
        return f"[assistant]\n{text}{calls}".rstrip()
    return None


def render_slices(
    chunk: Sequence[Message], sources: SourceSet, count_text: CountText, budget: int
) -> tuple[list[str], int]:
    """The scanned messages with source IDs, as transcripts of at most `budget` tokens each.
    Tool results and assistant text are shortened first; when the messages still do not
    fit one request they are split, in order, into several. Only parts holding a user
    source are kept (nothing else can be quoted); at most `MAX_PARTS`, the oldest first
    (what compaction removes is gone for good). Returns the parts and how many messages
    were left out."""
    pieces: list[tuple[str, bool]] = []
    for tool_cap, text_cap in SLICE_CAPS:
        pieces = [
            (p, m.role == "user" and sources.tag_for(m) is not None)
            for m in chunk
            if (p := render_slice_message(m, sources, tool_cap, text_cap)) is not None
        ]
        if sum(count_text(p) for p, _ in pieces) <= budget:
            break
    parts: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    used = 0
    for piece in pieces:
        cost = count_text(piece[0])
        if current and used + cost > budget:
            parts.append(current)
            current, used = [], 0
        current.append(piece)
        used += cost
    if current:
        parts.append(current)
    useful = [p for p in parts if any(has_source for _, has_source in p)]
    kept = useful[:MAX_PARTS]
    dropped = len(pieces) - sum(len(p) for p in kept)
    return ["\n\n".join(text for text, _ in p) for p in kept], dropped


def _json_objects(text: str) -> list[Any]:
    """JSON values in a model's answer: the whole text, fenced blocks, or the outermost
    braces; small models wrap their JSON in prose or code fences."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates += re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.DOTALL)
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    out: list[Any] = []
    for candidate in candidates:
        try:
            out.append(json.loads(candidate))
        except (json.JSONDecodeError, ValueError):
            continue
    return out


def _items(value: Any, *keys: str) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    if isinstance(value, dict):
        for key in keys:
            got = value.get(key)
            if isinstance(got, list):
                return [v for v in got if isinstance(v, dict)]
    return []


async def _apply_text_answer(
    state: MemoryToolState, text: str, registry: ToolRegistry, ctx: ToolContext
) -> None:
    """The JSON fallback: the same checks as the tools, item by item."""
    values = _json_objects(text)
    if not values:
        return
    value = values[0]
    if isinstance(value, dict) and "name" in value and "arguments" in value:
        # A tool call written out as text.
        await registry.call(str(value["name"]), value.get("arguments"), ctx)
        return
    for item in _items(value, "memories", "facts"):
        action = str(item.get("action") or "create").lower()
        try:
            plan = plan_fact(
                state,
                action="amend" if action == "amend" else "create",
                scope=item.get("scope"),
                subject=item.get("subject") or item.get("topic"),
                content=item.get("content") or item.get("fact"),
                quote=item.get("quote"),
                source=item.get("source"),
                require_view=False,
            )
            queue_fact(state, plan)
        except (MemoryStoreError, ToolError) as exc:
            state.refused.append(str(exc))
    if isinstance(value, dict):
        for item in _items(value.get("lessons"), "lessons"):
            try:
                queue_lesson(
                    state,
                    plan_lesson(
                        state,
                        scope=item.get("scope"),
                        subject=item.get("subject") or item.get("topic"),
                        content=item.get("content") or item.get("lesson"),
                    ),
                )
            except (MemoryStoreError, ToolError) as exc:
                state.refused.append(str(exc))


async def run_scan(
    inp: ScanInput,
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    count_text: CountText,
    input_budget: int,
    actor: str = EXTRACTOR_ID,
) -> ScanReport:
    """Scan one slice and queue what qualifies. A slice with no authenticated user message
    is skipped without a model call."""
    report = ScanReport()
    sources = SourceSet(inp.conversation_id, inp.chunk)
    if not len(sources):
        report.skipped = "no authenticated user message in the scanned messages"
        return report
    state = MemoryToolState(
        service, scopes, lambda: sources, "queue", actor=actor, conversation_id=inp.conversation_id
    )
    registry = ToolRegistry(memory_tools(state))
    ctx = ToolContext(workspace=service.root)
    context = build_context_block(inp, count_text, int(input_budget * CONTEXT_SHARE))
    index = _cap(render_listing(service, scopes), INDEX_CHARS)
    head = [f"Memory index:\n{index}"]
    if context:
        head.append(
            "Context block (no source IDs: never quote from it):\n"
            f"<<<CONTEXT\n{context}\nCONTEXT>>>"
        )
    schemas = json.dumps(registry.schemas())
    frame = count_text("\n\n".join(head)) + count_text(EXTRACTOR_SYSTEM) + count_text(schemas)
    frame += 200  # the scan's framing and the template's
    transcripts, report.dropped = render_slices(
        inp.chunk, sources, count_text, max(200, input_budget - frame)
    )
    if report.dropped:
        log.info("memory: %d messages of the slice were not scanned", report.dropped)
    for transcript in transcripts:
        prompt = "\n\n".join(
            [
                *head,
                "The part of the conversation to scan (quote only the user messages marked "
                f"with a source ID):\n<<<SCAN\n{transcript}\nSCAN>>>",
                "Suggest what qualifies, or nothing.",
            ]
        )
        await _converse(state, registry, ctx, complete, prompt, actor, report)
    report.queued = list(state.queued)
    report.refused = list(state.refused)
    return report


async def _converse(
    state: MemoryToolState,
    registry: ToolRegistry,
    ctx: ToolContext,
    complete: Complete,
    prompt: str,
    actor: str,
    report: ScanReport,
) -> None:
    """One extractor conversation: tool calls until a text answer (the JSON fallback)."""
    messages: list[Message] = [system(EXTRACTOR_SYSTEM.format(actor=actor)), user(prompt)]
    for _ in range(MAX_STEPS):
        report.steps += 1
        answer = await complete(messages, registry.schemas())
        if answer.calls:
            messages.append(assistant(answer.text, answer.calls))
            for call in answer.calls:
                outcome = await registry.call(call.name, call.arguments, ctx, call_id=call.id)
                messages.append(tool_result(call, outcome.content))
            continue
        await _apply_text_answer(state, answer.text, registry, ctx)
        return


def memory_diff(start: Snapshot | None, now: Snapshot) -> str:
    """The session's memory diff: entries now, and what changed since the chat started."""
    lines = ["Memory now:"]
    for item in now.entries:
        lines.append(
            f"- {item.canonical} ({item.entry.kind}, hash {item.hash[:12]}): "
            f"{strip_controls(item.entry.first_line)[:160]}"
        )
    if len(lines) == 1:
        lines.append("- (empty)")
    if start is None:
        lines.append("Changes in this session: unknown (no snapshot from the chat's start).")
        return "\n".join(lines)
    before = start.digest()
    after = now.digest()
    changes = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            changes.append(f"- added {path}: {strip_controls(after[path][0])[:160]}")
        elif path not in after:
            changes.append(f"- removed {path} (was: {strip_controls(before[path][0])[:160]})")
        elif before[path][1] != after[path][1]:
            changes.append(f"- changed {path}: {strip_controls(after[path][0])[:160]}")
    lines.append("Changes in this session:")
    lines.extend(changes or ["- (none)"])
    return "\n".join(lines)


async def run_curation(
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    diff: str,
    waiting: list[Suggestion],
    actor: str = LEARNER_ID,
) -> ScanReport:
    """One curation call; its revise_memory calls (or JSON answer) are queued."""
    report = ScanReport()
    state = MemoryToolState(service, scopes, lambda: SourceSet("", ()), "queue", actor=actor)
    registry = ToolRegistry([revise_tool(state)])
    ctx = ToolContext(workspace=service.root)
    shown = "\n".join(f"- {s.id} {s.describe()}" for s in waiting) or "- (none)"
    prompt = f"{diff}\n\nSuggestions waiting for review:\n{shown}\n\nSuggest revisions, or none."
    messages = [system(CURATION_SYSTEM.format(actor=actor)), user(prompt)]
    answer = await complete(messages, registry.schemas())
    report.steps = 1
    for call in answer.calls:
        await registry.call(call.name, call.arguments, ctx, call_id=call.id)
    if not answer.calls:
        for value in _json_objects(answer.text)[:1]:
            for item in _items(value, "revisions"):
                try:
                    queue_lesson(
                        state,
                        plan_revision(
                            state,
                            action=str(item.get("action", "")).lower(),
                            path=str(item.get("path", "")),
                            content=item.get("content"),
                            reason=item.get("reason"),
                        ),
                    )
                except (MemoryStoreError, ToolError) as exc:
                    state.refused.append(str(exc))
    report.queued = list(state.queued)
    report.refused = list(state.refused)
    return report
