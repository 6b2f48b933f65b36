"""The memory tools: view_memory, manage_memory, propose_lesson (and the curation-only
revise_memory). They follow the tool registry's pattern (engine/tools) and carry the whole
discipline of a memory write, so every path into memory passes the same checks:

- find the right scope: `global` (the user, everywhere), `project` (this workspace),
  `agent` (this agent's own); only the run's scopes are reachable;
- read before changing: an amend needs the entry viewed in this run, unchanged since;
- one file per subject: a create on an existing subject is refused (amend it instead),
  and an amend replaces the stale fact rather than appending a duplicate;
- only the user's own words: a create or amend carries `quote`, an exact span of an
  authenticated user message; a sentence the user corrected or forgot is refused;
- never a secret (the sensitivity check), never in a run that writes nothing.

Run as the main agent, manage_memory writes (after approval). Run as the memory extractor
or learner, the same checks run and the result is queued for review instead; delete and
rename are refused there. Lessons are always proposals, queued for the person.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.memory.entries import MemoryEntry, render_entry
from engine.memory.errors import (
    BadSubject,
    EntryConflict,
    MemoryRefused,
    MemoryStoreError,
    QuoteRejected,
    RevokedQuote,
)
from engine.memory.layout import Scope, canonical_path, subject_slug
from engine.memory.queue import Suggestion, new_suggestion_id
from engine.memory.sensitivity import check_not_secret
from engine.memory.service import MemoryService
from engine.memory.sources import QuoteMatch, SourceSet
from engine.tools.approval import ApprovalRequest
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError, ToolUnavailable
from engine.tools.registry import Tool

log = logging.getLogger(__name__)

VIEW_NAME = "view_memory"
MANAGE_NAME = "manage_memory"
LESSON_NAME = "propose_lesson"
REVISE_NAME = "revise_memory"
MEMORY_TOOL_NAMES = (VIEW_NAME, MANAGE_NAME, LESSON_NAME)
ALWAYS_KEY = "memory:write"
ALWAYS_LABEL = "Allow every memory change for this conversation"
MAX_STATEMENT_CHARS = 400
MAX_LESSON_CHARS = 1_200

Mode = Literal["direct", "queue", "read_only"]


@dataclass
class MemoryToolState:
    """What the memory tools of one run may reach, and what they did."""

    service: MemoryService
    scopes: list[Scope]
    sources: Callable[[], SourceSet]
    mode: Mode
    actor: str = "agent"
    conversation_id: str = ""
    on_write: Callable[[], None] | None = None  # a direct write happened: refresh the snapshot
    on_view: Callable[[str, tuple[str, ...]], None] | None = None  # (result text, paths)
    viewed: dict[str, str] = field(default_factory=dict)  # canonical path -> hash when read
    queued: list[str] = field(default_factory=list)  # suggestion IDs
    written: list[str] = field(default_factory=list)  # canonical paths
    refused: list[str] = field(default_factory=list)  # why each refused write failed

    def scope(self, name: str | None, default: str = "global") -> Scope:
        wanted = (name or default).strip().lower()
        for scope in self.scopes:
            if scope.kind == wanted or scope.key == wanted:
                return scope
        names = ", ".join(s.kind for s in self.scopes)
        raise BadSubject(f"scope {wanted!r} is not available in this run (use one of: {names})")

    def entry(self, scope: Scope, subject: str) -> MemoryEntry | None:
        return self.service.store.get(scope, subject)


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


def _refusals(state: MemoryToolState) -> Callable[[Handler], Handler]:
    """Memory's refusals become tool errors the model reads, and are counted."""

    def wrap(fn: Handler) -> Handler:
        @functools.wraps(fn)
        async def run(args: dict[str, Any], ctx: ToolContext) -> str:
            try:
                return await fn(args, ctx)
            except MemoryStoreError as exc:
                state.refused.append(str(exc))
                raise ToolError(str(exc)) from exc
            except ToolError as exc:
                state.refused.append(str(exc))
                raise

        return run

    return wrap


# -- checks shared by the tools and the extractor's JSON answers ------------------------------


def _statement(content: str | None, fallback: str) -> str:
    text = " ".join((content or "").split()) or " ".join(fallback.split())
    if len(text) > MAX_STATEMENT_CHARS:
        raise MemoryRefused(
            f"the statement is too long ({len(text)} chars): one line of at most "
            f"{MAX_STATEMENT_CHARS}"
        )
    return text


def authenticate(state: MemoryToolState, quote: str, source: str | None) -> QuoteMatch:
    """The quote's span in one authenticated user message whose sentences are not revoked."""
    if not quote or not quote.strip():
        raise QuoteRejected("a create or amend must carry `quote`: the user's exact words")
    matches = state.sources().matches(quote, source)
    revoked: RevokedQuote | None = None
    for match in matches:
        try:
            state.service.store.ledger.check(match.keys)
        except RevokedQuote as exc:
            revoked = exc
            continue
        return match
    assert revoked is not None
    raise revoked


def _already_saved(state: MemoryToolState, keys: tuple[str, ...], skip: str = "") -> None:
    found, _ = state.service.store.entries(state.scopes)
    for entry in found:
        if entry.canonical != skip and set(entry.fields.keys) & set(keys):
            raise EntryConflict(f"that claim is already in memory as {entry.canonical}")


@dataclass(frozen=True)
class FactPlan:
    action: str
    scope: Scope
    subject: str
    statement: str
    match: QuoteMatch
    current: MemoryEntry | None


def plan_fact(
    state: MemoryToolState,
    *,
    action: str,
    scope: str | None,
    subject: str | None,
    content: str | None,
    quote: str | None,
    source: str | None,
    require_view: bool = True,
) -> FactPlan:
    """Every check of a create or amend, in the order that explains a refusal best."""
    if state.mode == "read_only":
        raise ToolUnavailable("this run writes no memory (an ephemeral or sub-agent run)")
    target = state.scope(scope)
    if not subject:
        raise BadSubject("`subject` is required: a few words naming the topic, e.g. 'editor'")
    slug = subject_slug(subject)
    check_not_secret(subject, content or "", quote or "")
    match = authenticate(state, quote or "", source)
    check_not_secret(match.text)
    statement = _statement(content, match.text)
    current = state.entry(target, slug)
    path = canonical_path(target, slug)
    if action == "create":
        if current is not None:
            raise EntryConflict(
                f"{path} exists: one file per subject. Read it with view_memory and amend it "
                "to replace a stale fact, or pick another subject"
            )
    else:
        if current is None:
            raise EntryConflict(f"{path} does not exist; create it instead")
        if require_view and state.viewed.get(path) != current.hash:
            raise EntryConflict(f"read {path} with view_memory first (it may have changed)")
    _already_saved(state, match.keys, skip=path if action == "amend" else "")
    return FactPlan(action, target, slug, statement, match, current)


def queue_fact(state: MemoryToolState, plan: FactPlan) -> Suggestion:
    suggestion = Suggestion(
        id=new_suggestion_id(),
        kind="fact",
        action=plan.action,
        scope=plan.scope.key,
        subject=plan.subject,
        statement=plan.statement,
        quote=plan.match.text,
        keys=plan.match.keys,
        source=plan.match.reference,
        conversation=plan.match.source.conversation_id,
        against_hash=plan.current.hash if plan.current is not None else "",
        against_text=plan.current.text if plan.current is not None else "",
        by=state.actor,
    )
    state.service.queue.add(suggestion)
    state.queued.append(suggestion.id)
    return suggestion


def write_fact(state: MemoryToolState, plan: FactPlan) -> MemoryEntry:
    """The main agent's direct write, under the lock, re-checked there."""
    service = state.service
    with service.layout.write_lock():
        current = service.store.get(plan.scope, plan.subject)
        before = plan.current.hash if plan.current is not None else None
        now = current.hash if current is not None else None
        if now != before:
            raise EntryConflict(f"{canonical_path(plan.scope, plan.subject)} changed meanwhile")
        service.store.ledger.check(plan.match.keys)
        text = render_entry(
            kind="fact",
            origin="agent",
            statement=plan.statement,
            quotes=(plan.match.text,),
            keys=plan.match.keys,
            source=plan.match.reference,
        )
        entry = service.store.write(plan.scope, plan.subject, text)
        if current is not None:
            stale = [k for k in current.fields.keys if k not in plan.match.keys]
            service.store.ledger.revoke(stale, why="correct", path=entry.canonical)
    state.written.append(entry.canonical)
    state.viewed[entry.canonical] = entry.hash
    if state.on_write is not None:
        state.on_write()
    return entry


def plan_lesson(
    state: MemoryToolState, *, scope: str | None, subject: str | None, content: str | None
) -> Suggestion:
    if state.mode == "read_only":
        raise ToolUnavailable("this run writes no memory (an ephemeral or sub-agent run)")
    target = state.scope(scope, default="agent")
    if not subject:
        raise BadSubject("`subject` is required: a few words naming the lesson's topic")
    slug = subject_slug(subject)
    text = " ".join((content or "").split())
    if not text:
        raise MemoryRefused("`content` is required: the lesson in one or two sentences")
    if len(text) > MAX_LESSON_CHARS:
        raise MemoryRefused(f"the lesson is too long: at most {MAX_LESSON_CHARS} characters")
    check_not_secret(subject, text)
    current = state.entry(target, slug)
    if current is not None and current.kind == "fact":
        raise EntryConflict(
            f"{canonical_path(target, slug)} holds the user's words; propose the lesson under "
            "another subject"
        )
    return Suggestion(
        id=new_suggestion_id(),
        kind="lesson",
        action="rewrite" if current is not None else "create",
        scope=target.key,
        subject=slug,
        statement=text,
        against_hash=current.hash if current is not None else "",
        against_text=current.text if current is not None else "",
        by=state.actor,
    )


def queue_lesson(state: MemoryToolState, suggestion: Suggestion) -> Suggestion:
    state.service.queue.add(suggestion)
    state.queued.append(suggestion.id)
    return suggestion


def plan_revision(
    state: MemoryToolState, *, action: str, path: str, content: str | None, reason: str | None
) -> Suggestion:
    scope, subject = state.service.layout.locate(path)
    if scope.key not in {s.key for s in state.scopes}:
        raise BadSubject(f"{path} is not in this run's scopes")
    current = state.entry(scope, subject)
    if current is None:
        raise EntryConflict(f"{path} does not exist")
    statement = ""
    if action == "rewrite":
        if current.kind == "fact":
            raise EntryConflict(
                f"{path} holds the user's quoted words; facts are never rewritten (suggest "
                "a delete if it is stale)"
            )
        statement = " ".join((content or "").split())
        if not statement:
            raise MemoryRefused("a rewrite needs `content`: the lesson's new text")
        check_not_secret(statement)
    elif action != "delete":
        raise MemoryRefused("action must be delete or rewrite")
    check_not_secret(reason or "")
    return Suggestion(
        id=new_suggestion_id(),
        kind="revision",
        action=action,
        scope=scope.key,
        subject=subject,
        statement=statement,
        against_hash=current.hash,
        against_text=current.text,
        reason=" ".join((reason or "").split())[:300],
        by=state.actor,
    )


# -- the tools ------------------------------------------------------------------------------


VIEW_DESCRIPTION = (
    "Read memory: what you remember about the user, this project and yourself. With no "
    "arguments, lists the scopes and their entries (one file per subject). With `scope` "
    "and `subject`, reads one entry whole. Read an entry before amending it."
)
MANAGE_DESCRIPTION = (
    "Change memory. Only facts the user themselves stated or decided (stable preferences, "
    "recurring facts, standing project decisions) belong here; never task progress, your "
    "own inferences, or secrets. `action`: create (a new subject), amend (replace the "
    "entry's fact; read it first), delete, rename. A create or amend must carry `quote`, "
    "the user's exact words copied from one of their messages, and `content`, one line "
    "stating the fact. `scope`: global (the user, everywhere), project (this workspace), "
    "agent (this agent). `subject`: a few words naming the topic; it is the file name."
)
LESSON_DESCRIPTION = (
    "Propose a lesson for yourself (how to work better with this user or project). It is "
    "queued for the user to review, never written directly. `scope` defaults to agent."
)
REVISE_DESCRIPTION = (
    "Queue a revision of an existing entry for the user's review: delete a stale entry, or "
    "rewrite a lesson. Facts hold the user's words and are never rewritten."
)

_SCOPE_PROP = {
    "type": "string",
    "enum": ["global", "project", "agent"],
    "description": "global (the user), project (this workspace), agent (this agent)",
}


def memory_tools(state: MemoryToolState) -> list[Tool]:
    """view_memory, manage_memory and propose_lesson bound to one run's state."""
    guard = _refusals(state)

    @guard
    async def view_memory(args: dict[str, Any], ctx: ToolContext) -> str:
        scope_name = args.get("scope")
        subject = args.get("subject")
        if subject:
            scope = state.scope(scope_name)
            slug = subject_slug(subject)
            entry = state.entry(scope, slug)
            if entry is None:
                raise EntryConflict(f"no entry {canonical_path(scope, slug)}")
            text = (
                f"{entry.canonical} ({entry.kind}, origin {entry.fields.origin}, "
                f"hash {entry.hash[:12]})\n\n{entry.text}"
            )
            state.viewed[entry.canonical] = entry.hash
            if state.on_view is not None:
                state.on_view(text, (entry.canonical,))
            return text
        scopes = [state.scope(scope_name)] if scope_name else state.scopes
        return render_listing(state.service, scopes)

    @guard
    async def manage_memory(args: dict[str, Any], ctx: ToolContext) -> str:
        action = str(args.get("action", "")).strip().lower()
        if action in ("create", "amend"):
            plan = plan_fact(
                state,
                action=action,
                scope=args.get("scope"),
                subject=args.get("subject"),
                content=args.get("content"),
                quote=args.get("quote"),
                source=args.get("source"),
            )
            if state.mode == "queue":
                s = queue_fact(state, plan)
                return (
                    f"Queued for the user's review as {s.id}: {s.path} — {s.statement} "
                    "(nothing is written until they accept it)."
                )
            await _approve(
                ctx,
                f"{action.title()} memory {plan.scope.key}/{plan.subject}.md",
                f"{plan.statement}\n\n> {plan.match.text}",
            )
            entry = write_fact(state, plan)
            return f"Saved {entry.canonical}: {plan.statement}"
        if action in ("delete", "rename"):
            if state.mode == "queue":
                raise MemoryRefused(
                    f"{action} is not available here: this pass only suggests new or amended "
                    "facts for review"
                )
            if state.mode == "read_only":
                raise ToolUnavailable("this run writes no memory (an ephemeral or sub-agent run)")
            scope = state.scope(args.get("scope"))
            slug = subject_slug(str(args.get("subject") or ""))
            if state.entry(scope, slug) is None:
                raise EntryConflict(f"no entry {canonical_path(scope, slug)}")
            if action == "delete":
                await _approve(ctx, f"Forget memory {scope.key}/{slug}.md", "delete the entry")
                with state.service.layout.write_lock():
                    entry = state.service.store.forget(scope, slug, why="forget")
                if state.on_write is not None:
                    state.on_write()
                return f"Forgot {entry.canonical}; its quoted sentences cannot be saved again."
            new = subject_slug(str(args.get("new_subject") or ""))
            await _approve(ctx, f"Rename memory {scope.key}/{slug}.md", f"to {new}.md")
            with state.service.layout.write_lock():
                entry = state.service.store.rename(scope, slug, new)
            if state.on_write is not None:
                state.on_write()
            return f"Renamed to {entry.canonical}."
        raise MemoryRefused("action must be one of: create, amend, delete, rename")

    @guard
    async def propose_lesson(args: dict[str, Any], ctx: ToolContext) -> str:
        s = plan_lesson(
            state, scope=args.get("scope"), subject=args.get("subject"), content=args.get("content")
        )
        queue_lesson(state, s)
        return f"Queued lesson {s.id} for the user's review: {s.path}"

    return [
        Tool(
            VIEW_NAME,
            VIEW_DESCRIPTION,
            {
                "type": "object",
                "properties": {
                    "scope": _SCOPE_PROP,
                    "subject": {"type": "string", "description": "The entry to read."},
                },
                "required": [],
            },
            view_memory,
        ),
        Tool(
            MANAGE_NAME,
            MANAGE_DESCRIPTION,
            {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "amend", "delete", "rename"]},
                    "scope": _SCOPE_PROP,
                    "subject": {"type": "string", "description": "The topic (file name)."},
                    "content": {"type": "string", "description": "One line stating the fact."},
                    "quote": {
                        "type": "string",
                        "description": "The user's exact words, copied from their message.",
                    },
                    "source": {
                        "type": "string",
                        "description": "The source ID of the user message quoted, when shown.",
                    },
                    "new_subject": {"type": "string", "description": "For rename."},
                },
                "required": ["action", "subject"],
            },
            manage_memory,
            needs_approval=True,
            aliases={"topic": "subject", "text": "content", "fact": "content"},
        ),
        Tool(
            LESSON_NAME,
            LESSON_DESCRIPTION,
            {
                "type": "object",
                "properties": {
                    "scope": _SCOPE_PROP,
                    "subject": {"type": "string", "description": "The lesson's topic."},
                    "content": {"type": "string", "description": "The lesson."},
                },
                "required": ["subject", "content"],
            },
            propose_lesson,
            aliases={"topic": "subject", "lesson": "content", "text": "content"},
        ),
    ]


def revise_tool(state: MemoryToolState) -> Tool:
    """The curation call's tool. It belongs to the internal memory_curation category: no
    agent's registry lists it, only the learn pass holds it."""
    guard = _refusals(state)

    @guard
    async def revise_memory(args: dict[str, Any], ctx: ToolContext) -> str:
        s = plan_revision(
            state,
            action=str(args.get("action", "")).strip().lower(),
            path=str(args.get("path", "")),
            content=args.get("content"),
            reason=args.get("reason"),
        )
        queue_lesson(state, s)
        return f"Queued revision {s.id} ({s.action} {s.path}) for the user's review."

    return Tool(
        REVISE_NAME,
        REVISE_DESCRIPTION,
        {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["delete", "rewrite"]},
                "path": {"type": "string", "description": "The entry, e.g. global/editor.md."},
                "content": {"type": "string", "description": "A lesson's new text (rewrite)."},
                "reason": {"type": "string", "description": "Why, in one line."},
            },
            "required": ["action", "path"],
        },
        revise_memory,
    )


async def _approve(ctx: ToolContext, summary: str, detail: str) -> None:
    await ctx.require_approval(
        ApprovalRequest(
            tool=MANAGE_NAME,
            summary=summary,
            detail=detail,
            always_key=ALWAYS_KEY,
            always_label=ALWAYS_LABEL,
        )
    )


def render_listing(service: MemoryService, scopes: list[Scope]) -> str:
    """A directory listing: scopes and entries' first lines (no exposure is declared)."""
    lines: list[str] = []
    for scope in scopes:
        try:
            entries = service.store.read_scope(scope)
        except MemoryStoreError as exc:
            lines.append(f"[{scope.kind}] {scope.key}: unreadable ({exc})")
            continue
        lines.append(f"[{scope.kind}] {scope.key}/ ({len(entries)} entries)")
        for entry in entries:
            lines.append(f"  - {entry.subject} ({entry.kind}): {entry.first_line[:120]}")
    return "\n".join(lines) if lines else "No memory scopes in this run."
