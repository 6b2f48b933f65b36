"""The memory tools: view_memory, manage_memory, propose_lesson (and the curation-only
revise_memory). They follow the tool registry's pattern (engine/tools) and carry the whole
discipline of a memory write, so every path into memory passes the same checks:

- find the right scope: `global` (the user, everywhere), `project` (this workspace),
  `agent` (this agent's own); only the run's scopes are reachable;
- read before changing: an amend needs the entry viewed in this run, unchanged since;
- one file per subject: a create on an existing subject is refused (amend it instead),
  and an amend replaces the stale fact rather than appending a duplicate;
- only the user's own words: a create or amend carries `quote`, a whole sentence or clause
  of an authenticated user message, and its statement says what the quote says (the
  support check: no new content words, literals or dropped negations); a sentence the user
  corrected or forgot is refused;
- plain text only (no terminal escapes or invisible characters), never a secret (the
  sensitivity check), never in a run that writes nothing.

Nothing here writes memory: the person does, by accepting a suggestion. Run as the main
agent ("suggest"), a create or amend is queued as a fact suggestion and a delete as a
revision, whatever the run's approval policy says for files and commands (an `--approve
auto` run has accepted file edits and commands up front, not words put in the user's
mouth); a rename is refused. Run as the memory extractor or learner ("queue"), the same
checks run and delete and rename are refused. Lessons are always proposals in the agent's
own words, queued for the person and marked so; a lesson that repeats what a tool result
of this run said (a file the agent read, a page it fetched) is refused, since that text is
data, not the agent's experience.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.memory.entries import MemoryEntry
from engine.memory.errors import (
    BadSubject,
    EntryConflict,
    MemoryRefused,
    MemoryStoreError,
    QuoteRejected,
    RevokedQuote,
)
from engine.memory.layout import Scope, canonical_path, subject_slug
from engine.memory.plaintext import check_plain, strip_controls
from engine.memory.provenance import check_not_echoed
from engine.memory.queue import STATEMENTS_ID, Suggestion, new_suggestion_id
from engine.memory.sensitivity import check_not_secret
from engine.memory.service import MemoryService
from engine.memory.sources import QuoteMatch, SourceSet
from engine.memory.support import UnsupportedStatement, check_supported, check_whole_clause
from engine.messages import Message
from engine.tools.context import ToolContext
from engine.tools.errors import ToolError, ToolUnavailable
from engine.tools.registry import Tool

log = logging.getLogger(__name__)

VIEW_NAME = "view_memory"
MANAGE_NAME = "manage_memory"
LESSON_NAME = "propose_lesson"
REVISE_NAME = "revise_memory"
MEMORY_TOOL_NAMES = (VIEW_NAME, MANAGE_NAME, LESSON_NAME)
MAX_STATEMENT_CHARS = 400
MAX_LESSON_CHARS = 1_200

# suggest: the main agent (facts and deletes queued); queue: the extractor and learner (facts
# and lessons queued, delete and rename refused); read_only: a run that writes nothing.
Mode = Literal["suggest", "queue", "read_only"]


@dataclass
class MemoryToolState:
    """What the memory tools of one run may reach, and what they did."""

    service: MemoryService
    scopes: list[Scope]
    sources: Callable[[], SourceSet]
    mode: Mode
    actor: str = "agent"
    conversation_id: str = ""
    on_view: Callable[[str, tuple[str, ...]], None] | None = None  # (result text, paths)
    # The messages whose tool results a lesson must not repeat (this run's reading).
    untrusted: Callable[[], Sequence[Message]] | None = None
    # Waiting suggestions a fact for exactly the same sentences replaces (the deterministic
    # pass's, which the model may word better), instead of being refused as a duplicate.
    replaceable: frozenset[str] = frozenset()
    viewed: dict[str, str] = field(default_factory=dict)  # canonical path -> hash when read
    queued: list[str] = field(default_factory=list)  # suggestion IDs
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
    check_plain("statement", content)
    text = " ".join((content or "").split()) or " ".join(fallback.split())
    if len(text) > MAX_STATEMENT_CHARS:
        raise MemoryRefused(
            f"the statement is too long ({len(text)} chars): one line of at most "
            f"{MAX_STATEMENT_CHARS}"
        )
    return text


def authenticate(state: MemoryToolState, quote: str, source: str | None) -> QuoteMatch:
    """The quote's span in one authenticated user message, a whole sentence or clause of
    it, whose sentences are not revoked."""
    if not quote or not quote.strip():
        raise QuoteRejected("a create or amend must carry `quote`: the user's exact words")
    check_plain("quote", quote, multiline=True)
    matches = state.sources().matches(quote, source)
    whole: list[QuoteMatch] = []
    fragment: UnsupportedStatement | None = None
    for match in matches:
        try:
            check_whole_clause(match.source.message.content, match.start, match.end)
        except UnsupportedStatement as exc:
            fragment = exc
            continue
        whole.append(match)
    if not whole:
        assert fragment is not None
        raise fragment
    revoked: RevokedQuote | None = None
    for match in whole:
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
        raise ToolUnavailable("this run writes no memory (an ephemeral run)")
    target = state.scope(scope)
    if not subject:
        raise BadSubject("`subject` is required: a few words naming the topic, e.g. 'editor'")
    slug = subject_slug(subject)
    check_not_secret(subject, content or "", quote or "")
    statement = _statement(content, quote or "")
    match = authenticate(state, quote or "", source)
    check_not_secret(match.text)
    statement = _statement(content, match.text)
    text = match.source.message.content
    check_supported(statement, match.text, after=text[match.end :])
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
    state.service.queue.add(suggestion, replacing=state.replaceable | _restatements(state))
    state.queued.append(suggestion.id)
    return suggestion


def _restatements(state: MemoryToolState) -> frozenset[str]:
    """The deterministic pass's suggestions waiting from this conversation: a model's or
    the agent's wording of the same sentence replaces them (the pass itself skips them)."""
    if state.actor == STATEMENTS_ID:
        return frozenset()
    return frozenset(
        s.id
        for s in state.service.queue.pending()
        if s.by == STATEMENTS_ID and s.conversation == state.conversation_id
    )


def plan_lesson(
    state: MemoryToolState, *, scope: str | None, subject: str | None, content: str | None
) -> Suggestion:
    if state.mode == "read_only":
        raise ToolUnavailable("this run writes no memory (an ephemeral run)")
    target = state.scope(scope, default="agent")
    if not subject:
        raise BadSubject("`subject` is required: a few words naming the lesson's topic")
    slug = subject_slug(subject)
    check_plain("lesson", content)
    text = " ".join((content or "").split())
    if not text:
        raise MemoryRefused("`content` is required: the lesson in one or two sentences")
    if len(text) > MAX_LESSON_CHARS:
        raise MemoryRefused(f"the lesson is too long: at most {MAX_LESSON_CHARS} characters")
    check_not_secret(subject, text)
    if state.untrusted is not None:
        check_not_echoed(text, state.untrusted())
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
        check_plain("lesson", content)
        statement = " ".join((content or "").split())
        if not statement:
            raise MemoryRefused("a rewrite needs `content`: the lesson's new text")
        check_not_secret(statement)
    elif action != "delete":
        raise MemoryRefused("action must be delete or rewrite")
    check_plain("reason", reason)
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
    "Suggest a memory change; the user accepts or rejects it. Only facts the user stated "
    "(stable preferences, recurring facts, standing decisions); never task progress, your "
    "inferences, or secrets. `action`: create, amend (read the entry first), delete. A "
    "create or amend carries `quote`, the user's whole sentence copied exactly, and "
    "`content`, one line restating it in their words (keep every not/never/no; no new "
    "words, names, numbers or paths). `scope`: global (the user), project (this "
    "workspace), agent (this agent). `subject`: the topic, a few words (the file name)."
)
LESSON_DESCRIPTION = (
    "Propose a lesson for yourself (how to work better with this user or project). It is "
    "queued for the user's review as your own words, never as theirs. `scope` defaults "
    "to agent."
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
                f"hash {entry.hash[:12]})\n\n{strip_controls(entry.text)}"
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
            s = queue_fact(state, plan)
            return (
                f"Queued for the user's review as {s.id}: {s.path} — {s.statement} "
                "(nothing is written until they accept it)."
            )
        if action in ("delete", "rename"):
            if state.mode == "read_only":
                raise ToolUnavailable("this run writes no memory (an ephemeral run)")
            if state.mode == "queue" or action == "rename":
                raise MemoryRefused(
                    f"{action} is not available here: "
                    + (
                        "this pass only suggests new or amended facts for review"
                        if state.mode == "queue"
                        else "the user renames memory files themselves"
                    )
                )
            scope = state.scope(args.get("scope"))
            slug = subject_slug(str(args.get("subject") or ""))
            s = plan_revision(
                state,
                action="delete",
                path=canonical_path(scope, slug),
                content=None,
                reason=args.get("reason") or args.get("content"),
            )
            queue_lesson(state, s)
            return (
                f"Queued for the user's review as {s.id}: delete {s.path} (nothing is deleted "
                "until they accept it)."
            )
        raise MemoryRefused("action must be one of: create, amend, delete")

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
                    "action": {"type": "string", "enum": ["create", "amend", "delete"]},
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
                    "reason": {"type": "string", "description": "For delete: why, in one line."},
                },
                "required": ["action", "subject"],
            },
            manage_memory,
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
            first = strip_controls(entry.first_line)[:120]
            lines.append(f"  - {entry.subject} ({entry.kind}): {first}")
    return "\n".join(lines) if lines else "No memory scopes in this run."
