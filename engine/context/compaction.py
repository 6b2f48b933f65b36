"""The compact rung: summarize the middle of the history, keep its two ends.

The rebuild is `[system, ...pinned, summary, continuation, ...recent]`. The head (system
prompt, pinned and task messages) is kept verbatim through every cycle; an earlier summary
is merged into the new one, never summarized again as raw history and never dropped; the
recent tail is kept verbatim by a token budget, the newest unit always, and a tool call is
never split from its results. The summarizer is injected (`summarize`), so the same code
runs against the agent's model, a separate summarizer model, or a test double.

A bad summary never replaces history: an empty one, one cut off at its output limit
(finish_reason "length"), an answer with none of the checkpoint's headings ("Noted."), or one
that is degenerate or leaks the prompt's scaffolding (engine/context/summary_checks.py) is
refused, and the guided questions are asked. When nothing the summarizer wrote survives,
the checkpoint is the mechanical part alone: the user's own statements
(engine/context/stated.py), the files the tools read and what earlier checkpoints carried
(`source` "mechanical"); only when even that is empty do the original messages come back.
Whatever is accepted, the earlier checkpoint's task sections are carried into it and the
whole is capped at the summary's budget, counted as the model is shown it
(engine/context/model_face.py). A summarizer that raises is reported as `failed`, never
raised: the caller trims instead, and the run goes on. Cancellation is not caught.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from engine.context.budget import recent_tail_tokens, summary_max_tokens
from engine.context.checkpoint import checkpoint_entries, stored_checkpoint
from engine.context.checkpoint_answer import (
    assemble_checkpoint,
    grounded_summary,
    reference_text,
    summary_refusal,
)
from engine.context.constants import (
    CONTINUATION_ROLE,
    KEEP_REQUEST_TAIL_SHARE,
    MIN_SUMMARIZABLE_TOKENS,
    REASON_PREFLIGHT,
    SUMMARY_PROMPT_MARGIN_TOKENS,
)
from engine.context.frame_words import frame_word, language_of
from engine.context.grounding import Ground, conversation_ground, hygienic_prior
from engine.context.guided import guided_checkpoint
from engine.context.history import CountMessage, Unit, group_units, is_fixed, is_turn_start
from engine.context.model_face import render_for_model, summary_message
from engine.context.progress import extract_run_progress
from engine.context.replay import (
    Replay,
    ReplayPrefix,
    replay_messages,
    replay_request,
)
from engine.context.ride import HookRun, Ride, split_answer
from engine.context.stated import Stated, StoreText, carry_statements, statement_budget
from engine.context.stored_progress import cap_keeping_progress
from engine.context.summarizer import (
    GUIDED_SYSTEM,
    Summarize,
    SummaryRequest,
    SummaryResult,
)
from engine.context.transcript_request import build_summary_request
from engine.messages import Message
from engine.resources import prompt

log = logging.getLogger(__name__)

CompactionStatus = Literal["compacted", "skipped", "refused", "failed"]
# What the checkpoint's summarizer-written part came from: the whole-schema answer, the
# guided questions, or nothing (the summarizer's answers were all refused).
SummarySource = Literal["freeform", "guided", "mechanical"]

# Between the checkpoint and the verbatim tail of a rebuilt history.
CONTINUATION_TEXT = prompt("continuation")


def continuation_text(messages: Sequence[Message]) -> str:
    """The note between the checkpoint and the kept tail, in the language the user writes."""
    said = [m.content for m in messages if m.role == "user" and m.kind == "chat"]
    language = language_of(said[-6:])
    return CONTINUATION_TEXT if language == "en" else frame_word("continuation", language)


class JournalSink(Protocol):
    def append(self, entry: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class CompactionPlan:
    """Where the history splits. `middle` is what the summarizer reads and the rebuild
    removes; `head` and `tail` survive verbatim."""

    head: list[Message]
    prior_checkpoints: list[str]
    middle: list[Message]
    tail: list[Message]
    tail_budget: int
    removed_tokens: int = 0

    @property
    def removed(self) -> list[Message]:
        """The middle minus what the tail also keeps (the current turn's user message)."""
        kept = {id(m) for m in self.tail}
        return [m for m in self.middle if id(m) not in kept]

    def checkpoint_at(self, after_kept: bool) -> int:
        """Where in the tail the rebuild puts the checkpoint: first (0), or with `after_kept`
        just before the current turn's request (the tail's last user message), so that the
        kept messages ahead of it keep their order in the engine's cache. An engine that
        moves a kept part of its cache to a new place (llama-server's chunk reuse) then
        reuses them; new text ahead of them, the checkpoint, would end its matching there.
        A tail that ends with a finished answer has no current request: the checkpoint goes
        after all of it, and only the user's next message follows."""
        if not after_kept:
            return 0
        last = self.tail[-1] if self.tail else None
        if last is not None and last.role == "assistant" and not last.tool_calls:
            return len(self.tail)  # an answered turn (a compaction ahead, /compact): after all
        return next((i for i in range(len(self.tail) - 1, -1, -1)
                     if is_turn_start(self.tail[i])), 0)  # fmt: skip

    @property
    def nothing_to_summarize(self) -> bool:
        """Nothing old enough, or too little to be worth a summary of its own."""
        if not any(m.content.strip() or m.tool_calls for m in self.removed):
            return True
        return self.removed_tokens < MIN_SUMMARIZABLE_TOKENS


@dataclass(frozen=True)
class CompactionResult:
    status: CompactionStatus
    reason: str  # preflight | context_overflow | manual | session_budget | shared_pool
    messages: list[Message]  # the rebuilt history, or the original one when not compacted
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    detail: str = ""  # why skipped, refused or failed
    summarized: int = 0  # messages the summary replaced
    checkpoint: str = ""
    progress_note: str = ""
    journal_error: str = ""
    plan: CompactionPlan | None = field(default=None, repr=False)
    guided: bool = False  # the checkpoint came from one question per section
    freeform_refused: bool = False  # the summarizer's whole-schema answer was refused
    source: SummarySource = "freeform"

    @property
    def checkpoint_id(self) -> str:
        """The compaction's id: its checkpoint message's ("" when it did not compact). The
        store records under it what the rewrite replaced, so the user can restore it."""
        if not self.ok:
            return ""
        return next((m.id for m in self.messages if m.kind == "summary"), "")

    @property
    def ok(self) -> bool:
        return self.status == "compacted"

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


def plan_compaction(
    messages: Sequence[Message], *, count_message: CountMessage, tail_tokens: int
) -> CompactionPlan:
    """Split a history for compaction. The tail walks back from the newest unit (always
    kept) while units fit `tail_tokens`; the first that does not fit ends it. The user
    message that opened the current turn (the request being worked on) stays verbatim too
    when it is small (a quarter of the tail budget at most): room is set aside for it."""
    head: list[Message] = []
    priors: list[str] = []
    body: list[Message] = []
    for msg in messages:
        if msg.kind == "summary":
            priors.append(stored_checkpoint(msg))
        elif msg.kind == "continuation":
            continue
        elif is_fixed(msg):
            head.append(msg)
        else:
            body.append(msg)

    units = group_units(body)
    tokens = [count_message(m) for m in body]
    start = _tail_start(units, tokens, tail_tokens)
    tail_idx = [i for u in units[start:] for i in u]
    request = next((u[0] for u in reversed(units) if is_turn_start(body[u[0]])), None)
    if (
        request is not None
        and request not in tail_idx
        and tokens[request] <= tail_tokens * KEEP_REQUEST_TAIL_SHARE
    ):
        start = _tail_start(units, tokens, tail_tokens - tokens[request])
        tail_idx = [request, *(i for u in units[start:] for i in u)]
    middle_idx = [i for u in units[:start] for i in u]
    middle = [body[i] for i in middle_idx]
    kept = set(tail_idx)
    return CompactionPlan(
        head=head,
        prior_checkpoints=priors,
        middle=middle,
        tail=[body[i] for i in tail_idx],
        tail_budget=tail_tokens,
        removed_tokens=sum(tokens[i] for i in middle_idx if i not in kept),
    )


def _tail_start(units: list[Unit], tokens: list[int], budget: int) -> int:
    """The first unit of the tail: the newest always, older ones while they fit."""
    room = budget
    start = len(units)
    for k in range(len(units) - 1, -1, -1):
        cost = sum(tokens[i] for i in units[k])
        if k != len(units) - 1 and cost > room:
            break
        room -= cost
        start = k
    return start


def _text_tokens(text: str, count_message: CountMessage) -> int:
    """A bare text's tokens in the per-message counter's units (its framing taken off)."""
    return max(
        0,
        count_message(Message(role="user", content=text))
        - count_message(Message(role="user", content="")),
    )


def _newer_to_summarize(
    replay: Replay, messages: Sequence[Message], after_checkpoint: Sequence[Message]
) -> list[Message]:
    """What came after the last request that the summarizer must read: the part the
    rebuild keeps verbatim after the checkpoint is left out, so the engine does not
    evaluate it once for the summary and again in its new place after it. (What the
    rebuild keeps ahead of the checkpoint stays in: the engine then holds it in the order
    the rebuild sends it.)"""
    kept = {id(m) for m in after_checkpoint}
    newer = replay.newer(messages)
    while newer and id(newer[-1]) in kept:
        newer.pop()
    return newer


# The hook compaction runs just before the summarizer (the memory extractor's): the plan,
# and the replayed prefix where compaction was given the conversation as last sent (None
# where it was not: another summarizer model, nothing sent yet).
BeforeSummarize = Callable[[CompactionPlan, ReplayPrefix | None], Awaitable[None]]


def _result(
    status: CompactionStatus,
    reason: str,
    before: Sequence[Message],
    after: list[Message],
    count_message: CountMessage,
    **extra: Any,
) -> CompactionResult:
    return CompactionResult(
        status=status,
        reason=reason,
        messages=after,
        messages_before=len(before),
        messages_after=len(after),
        tokens_before=sum(count_message(m) for m in before),
        tokens_after=sum(count_message(m) for m in after),
        **extra,
    )


async def compact(
    messages: Sequence[Message],
    *,
    window: int,
    count_message: CountMessage,
    summarize: Summarize,
    reason: str = REASON_PREFLIGHT,
    work_state: str | None = None,
    journal: JournalSink | None = None,
    tail_tokens: int | None = None,
    max_summary_tokens: int | None = None,
    guided_only: bool = False,
    mechanical_only: bool = False,
    summarizer_window: int | None = None,
    before_summarize: BeforeSummarize | None = None,
    replay: Replay | None = None,
    store_result: StoreText | None = None,
    checkpoint_after_kept: bool = False,
    tools_offered: bool = True,
) -> CompactionResult:
    """Summarize the middle of `messages` and rebuild the history around the summary.

    `replay` (the conversation exactly as last sent, for a summarizer that is the agent's
    own model on the same engine) makes the summarizer's requests that conversation plus
    the checkpoint instruction: the engine finds the whole prefix in its cache and
    evaluates little more than the instruction. Without it, or when its answer would not
    fit the window, the summarizer reads the removed messages as fenced material.

    `before_summarize` runs on the plan just before the summarizer (the memory extractor's
    hook), with the replayed prefix when `replay` is given (None when it is not): the
    conversation as last sent and the newer messages the checkpoint request carries, so the
    hook's own request can share the engine's cache too. The hook is best-effort: its
    failures are logged and never block compaction. The
    summary is appended to `journal` before it enters the context; a journal that cannot
    be written is reported in `journal_error` and does not stop the compaction.
    `store_result` keeps the oldest user statements that outgrow their budget, and the
    files and steps the checkpoint's cap leaves out. `checkpoint_after_kept` (an engine
    that reuses kept parts of its cache at a new place) puts the checkpoint after the
    kept messages that precede the current request (`CompactionPlan.checkpoint_at`).
    Without `tools_offered` the checkpoint points at no stored file (the model could not
    read it), so the user's statements come before what the summarizer wrote.
    `guided_only` skips the free-form checkpoint, `mechanical_only` every question: the
    model was seen unable to write them (engine/context/summarizer_record.py).
    """
    tail_budget = tail_tokens if tail_tokens is not None else recent_tail_tokens(window)
    plan = plan_compaction(messages, count_message=count_message, tail_tokens=tail_budget)
    original = list(messages)
    # What the summarizer may write is what the conversation holds (engine/context/
    # grounding.py); an earlier checkpoint's lines that are no fact are not carried on.
    ground = conversation_ground(original, plan.prior_checkpoints)
    plan = replace(
        plan, prior_checkpoints=[hygienic_prior(p, ground) for p in plan.prior_checkpoints]
    )
    if plan.nothing_to_summarize:
        return _result(
            "skipped", reason, original, original, count_message,
            detail="nothing old enough to summarize", plan=plan,
        )  # fmt: skip

    out_tokens = max_summary_tokens or summary_max_tokens(window)
    split = plan.checkpoint_at(checkpoint_after_kept)
    ahead, behind = plan.tail[:split], plan.tail[split:]
    newer = _newer_to_summarize(replay, messages, behind) if replay is not None else []
    replayed = (
        replay_request(replay, window=window, max_tokens=out_tokens, work_state=work_state,
                       count_message=count_message, newer=newer)
        if replay is not None
        else None
    )  # fmt: skip
    if replayed is not None:
        newer = replayed[1]

    # Memory's extraction runs first; on the replayed conversation it rides the free-form
    # checkpoint request where both answers fit (engine/context/ride.py).
    asks_model = not (guided_only or mechanical_only)
    ride = Ride() if replayed is not None and asks_model else None
    prefix = ReplayPrefix(replay, tuple(newer), ride=ride) if replay is not None else None
    hook = HookRun(
        (lambda: before_summarize(plan, prefix)) if before_summarize is not None else None, ride
    )
    try:
        return await _summarize_and_rebuild(
            hook, plan, original, replayed, newer, replay,
            window=window, count_message=count_message, summarize=summarize, reason=reason,
            work_state=work_state, journal=journal, out_tokens=out_tokens,
            guided_only=guided_only, mechanical_only=mechanical_only,
            summarizer_window=summarizer_window, store_result=store_result,
            ahead=ahead, behind=behind, ground=ground, tools_offered=tools_offered,
        )  # fmt: skip
    finally:
        hook.close()


async def _summarize_and_rebuild(
    hook: HookRun,
    plan: CompactionPlan,
    original: list[Message],
    replayed: tuple[SummaryRequest, list[Message]] | None,
    newer: list[Message],
    replay: Replay | None,
    *,
    window: int,
    count_message: CountMessage,
    summarize: Summarize,
    reason: str,
    work_state: str | None,
    journal: JournalSink | None,
    out_tokens: int,
    guided_only: bool,
    mechanical_only: bool,
    summarizer_window: int | None,
    store_result: StoreText | None,
    ahead: list[Message],
    behind: list[Message],
    ground: Ground,
    tools_offered: bool,
) -> CompactionResult:
    """`compact`'s summary and rebuild, with memory's hook running beside it (`hook`)."""
    joined = await hook.joined()
    if joined is not None and replay is not None:
        combined = replay_request(
            replay, window=window, max_tokens=out_tokens, work_state=work_state,
            count_message=count_message, newer=newer, rider=joined,
        )  # fmt: skip
        if combined is None:  # both answers do not fit: memory asks on its own first
            await hook.finish(None)
            joined = None
        else:
            replayed = combined
    else:
        await hook.finish(None)

    def face_tokens(checkpoint: str) -> int:
        face = render_for_model(checkpoint, after=bool(ahead), tools=tools_offered)
        return _text_tokens(face, count_message)

    reference = reference_text(original, plan.prior_checkpoints, work_state)
    prompt_budget = (summarizer_window or window) - out_tokens - SUMMARY_PROMPT_MARGIN_TOKENS
    request = build_summary_request(
        plan,
        count_message=count_message,
        max_tokens=out_tokens,
        prompt_budget=prompt_budget,
        work_state=work_state,
    )
    if replayed is not None:
        request = replayed[0]
    if guided_only or mechanical_only:
        # This summarizer was already seen unable to write the whole schema: skip the
        # free-form attempt and its cost, and go straight to the guided questions.
        answer = SummaryResult("", "skipped")
        refusal: str | None = "the summarizer cannot write the whole checkpoint"
    else:
        try:
            answer = await summarize(request)
        except Exception as exc:
            log.warning("the summarizer failed: %s", exc, exc_info=True)
            await hook.finish(None)
            detail = f"the summarizer failed: {exc}" if str(exc) else "the summarizer failed"
            return _result(
                "failed", reason, original, original, count_message, detail=detail, plan=plan
            )
        if joined is not None:  # the checkpoint, then memory's part
            text, part = split_answer(answer.text)
            await hook.finish(part)
            answer = SummaryResult(text, None if part else answer.finish_reason)
        refusal = summary_refusal(answer, reference)
    text = answer.text
    if refusal is None:
        text, refusal = grounded_summary(text, ground)
    source: SummarySource = "freeform"
    freeform_refused = refusal is not None
    if refusal is not None:
        # A small model that cannot write the whole schema may still answer one question
        # per section; an incomplete answer is dropped there too.
        if mechanical_only:
            guided = None
        elif replayed is not None and replay is not None:
            guided = await guided_checkpoint(
                "", summarize, frame=lambda q: replay_messages(replay, q, newer),
                tools=replay.tools, reference=reference, ground=ground,
            )  # fmt: skip
        else:
            guided_request = build_summary_request(
                plan,
                count_message=count_message,
                max_tokens=out_tokens,
                prompt_budget=prompt_budget,
                work_state=work_state,
                system_text=GUIDED_SYSTEM,
                closing="",
            )
            guided = await guided_checkpoint(
                guided_request.messages[1].content.rstrip(), summarize, reference=reference,
                ground=ground,
            )  # fmt: skip
        text, source = (guided, "guided") if guided is not None else ("", "mechanical")

    progress = source != "freeform"
    # Without tools the statements get what the task (Goal, Constraints, Done, Decisions)
    # leaves: the oldest beyond it could be pointed at only with a tool.
    task = assemble_checkpoint(
        text, plan.prior_checkpoints, plan.middle, Stated(), progress=progress
    )
    stated = carry_statements(
        plan.prior_checkpoints,
        plan.removed,
        plan.tail,
        budget=statement_budget(
            out_tokens, tools=tools_offered, face_tokens=face_tokens, task=task
        ),
        count_text=lambda t: _text_tokens(t, count_message),
        store=store_result,
    )
    checkpoint = assemble_checkpoint(
        text, plan.prior_checkpoints, plan.middle, stated, progress=progress
    )
    if not checkpoint_entries(checkpoint):
        # Nothing the summarizer wrote survived and nothing mechanical is there to carry:
        # no checkpoint at all is better than an empty one.
        return _result(
            "refused", reason, original, original, count_message, detail=refusal or "",
            plan=plan, freeform_refused=freeform_refused,
        )  # fmt: skip
    checkpoint = cap_keeping_progress(
        checkpoint, out_tokens, face_tokens, lambda t: _text_tokens(t, count_message),
        store_result if tools_offered else None,
    )  # fmt: skip
    summary = summary_message(checkpoint, after=bool(ahead), tools=tools_offered)
    continuation = Message(
        role=CONTINUATION_ROLE, content=continuation_text(original), kind="continuation"
    )
    rebuilt = [*plan.head, *ahead, summary, continuation, *behind]
    if sum(map(count_message, rebuilt)) >= sum(map(count_message, original)):
        return _result(
            "refused", reason, original, original, count_message,
            detail="the summary would not be smaller than what it replaces", plan=plan,
        )  # fmt: skip

    journal_error = ""
    if journal is not None:
        try:
            journal.append(
                {
                    "ts": time.time(),
                    "kind": "compaction",
                    "reason": reason,
                    "messages_summarized": len(plan.removed),
                    "summary": checkpoint,
                    "checkpoint": summary.id,  # a restore of it leaves it out on resume
                    "summary_source": source,
                    "shown": summary.content,
                }
            )
        except Exception as exc:  # the conversation never depends on a writable disk
            log.warning("could not append the summary to the journal: %s", exc)
            journal_error = str(exc) or type(exc).__name__

    return _result(
        "compacted",
        reason,
        original,
        rebuilt,
        count_message,
        summarized=len(plan.removed),
        checkpoint=checkpoint,
        progress_note=extract_run_progress(plan.tail),
        journal_error=journal_error,
        guided=source == "guided",
        freeform_refused=freeform_refused,
        source=source,
        plan=plan,
    )
