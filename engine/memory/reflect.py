"""Reflection at the end of a conversation, and learn: scans of a saved conversation.

Both take the messages after the conversation's watermark (`.reflected-conversations.json`)
and claim them, under the memory write lock, before any model call: two reflections started
together never cover the same messages, because the second finds nothing left to claim. A
failure before the pass completes releases the claim (when no later claim has moved the
watermark since), so those messages can be retried.

`/learn` is asked for by the person, who watches its progress: it reads the two newest
chunks of its claim with the model (the older ones with the first pass only, logged), then
makes one curation call. The reflection runs after the person has left, on a machine they
may still be using, so it is bounded: the first pass reads every claimed message, then the
model gets one request in all (`Meter(limit=1)`, on the newest chunk) and a time limit
(`REFLECTION_TIME_LIMIT_S`). When the time runs out the request is cancelled and the
reflection ends cleanly, saying so in memory.log; its claim stands (the user's own
statements were read), so the next reflection does not spend the same time again.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.memory.curation import LEARNER_ID, memory_diff, run_curation
from engine.memory.errors import ClaimUnavailable
from engine.memory.extractor import EXTRACTOR_ID, ScanReport, run_scan, scan_statements
from engine.memory.jsonfile import read_json_object, write_json_object
from engine.memory.layout import MemoryLayout, Scope
from engine.memory.requests import Complete, Meter
from engine.memory.service import MemoryService
from engine.memory.sizing import CountRequest, CountText, Room, approximate, margin
from engine.memory.store import Snapshot
from engine.memory.transcript import ScanInput
from engine.messages import Message
from engine.store import MessageRecord

log = logging.getLogger(__name__)

MAX_CHUNKS = 2  # what `/learn` reads with the model
REFLECTION_REQUESTS = 1  # the close-time reflection's model requests, in all
REFLECTION_TIME_LIMIT_S = 90.0
# A chunk is what one scan request's transcript holds beside its frame (the prompt, the
# memory index, the context block): this share of the room the window leaves.
CHUNK_SHARE = 0.35

# progress(step, steps, what): where `/learn` is (each chunk read, then the curation call).
LearnProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Claim:
    conversation_id: str
    token: str
    previous: int  # the watermark before this claim (a stored row's seq; 0: none)
    through: int  # the last row this claim covers
    messages: list[Message]  # the claimed messages, in order
    earlier: list[Message]  # the messages at or before the previous watermark


def _relevant(message: Message) -> bool:
    return not message.is_notice and message.kind not in ("summary", "continuation")


class Watermarks:
    def __init__(self, layout: MemoryLayout) -> None:
        self.layout = layout

    def _all(self) -> dict[str, dict[str, object]]:
        """Every well-formed mark; one damaged by hand or a foreign writer counts as absent
        (that conversation is reflected on again, which the queue's dedupe absorbs)."""
        data = read_json_object(self.layout.watermark_path).get("conversations", {})
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, dict) and _through(v) >= 0}

    def get(self, conversation_id: str) -> int:
        return _through(self._all().get(conversation_id, {}))

    def claim(self, conversation_id: str, records: Sequence[MessageRecord]) -> Claim:
        """Claim every stored row after the watermark. `ClaimUnavailable` when none is new.
        A row a rewrite re-stored (same message ID) is not new."""
        with self.layout.write_lock():
            marks = self._all()
            mark = marks.get(conversation_id, {})
            previous = _through(mark)
            seen = {r.message.id for r in records if r.seq <= previous}
            earlier = [r.message for r in records if r.seq <= previous]
            fresh: list[Message] = []
            for record in records:
                if record.seq <= previous or record.message.id in seen:
                    continue
                seen.add(record.message.id)
                fresh.append(record.message)
            through = max((r.seq for r in records), default=previous)
            if through <= previous or not any(_relevant(m) for m in fresh):
                raise ClaimUnavailable(f"nothing new to reflect on in {conversation_id}")
            token = secrets.token_hex(6)
            marks[conversation_id] = {
                "through": through,
                "previous": previous,
                "claim": token,
                "at": round(time.time(), 3),
            }
            write_json_object(self.layout.watermark_path, {"conversations": marks})
        return Claim(
            conversation_id,
            token,
            previous,
            through,
            [m for m in fresh if _relevant(m)],
            [m for m in _dedupe(earlier) if _relevant(m)],
        )

    def release(self, claim: Claim) -> bool:
        """Give a claim back, when no later claim has moved the watermark since."""
        with self.layout.write_lock():
            marks = self._all()
            mark = marks.get(claim.conversation_id, {})
            if mark.get("claim") != claim.token:
                return False
            if claim.previous:
                marks[claim.conversation_id] = {
                    "through": claim.previous,
                    "released": claim.token,
                    "at": round(time.time(), 3),
                }
            else:
                marks.pop(claim.conversation_id, None)
            write_json_object(self.layout.watermark_path, {"conversations": marks})
        return True


def _through(mark: dict[str, object]) -> int:
    """The mark's last reflected row; -1 when the field is not a whole number."""
    value = mark.get("through", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        return -1
    return value


def _dedupe(messages: list[Message]) -> list[Message]:
    seen: set[str] = set()
    out: list[Message] = []
    for m in messages:
        if m.id not in seen:
            seen.add(m.id)
            out.append(m)
    return out


def make_chunks(
    messages: Sequence[Message], count_text: CountText, budget: int
) -> list[list[Message]]:
    """The claimed messages in chunks of at most `budget` tokens (a message larger than
    that is a chunk of its own), in order."""
    chunks: list[list[Message]] = []
    current: list[Message] = []
    used = 0
    for message in messages:
        cost = count_text(message.content) + 8
        if current and used + cost > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(message)
        used += cost
    if current:
        chunks.append(current)
    return chunks


def chunk_tokens(window: int) -> int:
    """How much of a claim one chunk holds on `window` (about what one request carries)."""
    return max(100, int((window - margin(window)) * CHUNK_SHARE))


@dataclass
class PassReport:
    conversation_id: str
    claimed: int = 0  # messages claimed
    previous: int = 0
    through: int = 0
    scanned: int = 0  # messages in the chunks read
    skipped_chunks: int = 0
    queued: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    nothing_new: bool = False
    released: bool = False
    timed_out: bool = False  # the time limit ended the model's part
    requests: int = 0  # model requests sent
    prompt_tokens: int = 0  # their prompts, as counted before sending
    seconds: float = 0.0  # spent waiting on the model

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


async def _scan_claim(
    claim: Claim,
    report: PassReport,
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    count_text: CountText,
    window: int,
    count_request: CountRequest | None,
    actor: str,
    progress: LearnProgress | None = None,
    max_chunks: int = MAX_CHUNKS,
    meter: Meter | None = None,
) -> int:
    """Scan the claim's newest chunks, each about what one request holds; returns how many
    were read."""
    chunks = make_chunks(claim.messages, count_text, chunk_tokens(window))
    read = chunks[-max_chunks:]
    report.skipped_chunks = len(chunks) - len(read)
    if report.skipped_chunks:
        left = sum(len(c) for c in chunks[: report.skipped_chunks])
        log.warning(
            "memory: %s read the %d newest chunks of %s with the model; skipped %d older "
            "chunks (%d messages), read for the user's own statements only",
            actor,
            len(read),
            claim.conversation_id,
            report.skipped_chunks,
            left,
        )
        older = [m for c in chunks[: report.skipped_chunks] for m in c]
        report.queued += scan_statements(claim.conversation_id, older, service, scopes)
    for i, chunk in enumerate(read):
        if progress is not None:
            progress(i + 1, len(read) + 1, f"Reading part {i + 1} of {len(read)}")
        before = [m for c in chunks[: report.skipped_chunks + i] for m in c]
        after = [m for c in read[i + 1 :] for m in c]
        result: ScanReport = await run_scan(
            ScanInput(
                claim.conversation_id,
                chunk,
                later=after,
                earlier=[*claim.earlier, *before],
            ),
            service=service,
            scopes=scopes,
            complete=complete,
            count_text=count_text,
            window=window,
            count_request=count_request,
            actor=actor,
            meter=meter,
        )
        report.scanned += len(chunk)
        report.queued += result.queued
        report.refused += result.refused
    return len(read)


def _note_claim(report: PassReport, claim: Claim) -> None:
    """What the pass claimed: how many messages, from which watermark through which."""
    report.claimed, report.previous, report.through = (
        len(claim.messages),
        claim.previous,
        claim.through,
    )


async def reflect_conversation(
    records: Sequence[MessageRecord],
    conversation_id: str,
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    count_text: CountText,
    window: int,
    count_request: CountRequest | None = None,
    meter: Meter | None = None,
    time_limit_s: float | None = REFLECTION_TIME_LIMIT_S,
) -> PassReport:
    """The conversation-end pass: claim; the first pass over every claimed message; then
    the model on the newest chunk, within `meter` (default: one request) and `time_limit_s`
    (None: no limit), every request fitting `window` with its answer. A `meter` shared by
    several conversations bounds them together."""
    report = PassReport(conversation_id)
    marks = Watermarks(service.layout)
    try:
        claim = marks.claim(conversation_id, records)
    except ClaimUnavailable:
        report.nothing_new = True
        return report
    _note_claim(report, claim)
    meter = meter if meter is not None else Meter(limit=REFLECTION_REQUESTS)
    before = (meter.requests, meter.prompt_tokens, meter.seconds)
    try:
        report.queued += scan_statements(conversation_id, claim.messages, service, scopes)
        if time_limit_s is not None and time_limit_s <= 0:
            raise TimeoutError
        if meter.left == 0:
            log.info("memory: reflect %s: no model request left; first pass only", conversation_id)
        else:
            async with asyncio.timeout(time_limit_s):
                await _scan_claim(
                    claim,
                    report,
                    service=service,
                    scopes=scopes,
                    complete=complete,
                    count_text=count_text,
                    window=window,
                    count_request=count_request,
                    actor=EXTRACTOR_ID,
                    max_chunks=1,
                    meter=meter,
                )
    except TimeoutError:
        report.timed_out = True
        log.warning(
            "memory: reflect %s stopped at its time limit (%.0f s): the model's answer was "
            "not waited for; the user's own statements were read (queued %s)",
            conversation_id,
            time_limit_s or 0,
            report.queued,
        )
    except BaseException:
        report.released = marks.release(claim)
        raise
    waiting = {s.id for s in service.queue.pending()}  # a model's wording replaced some
    report.queued = [i for i in dict.fromkeys(report.queued) if i in waiting]
    report.requests = meter.requests - before[0]
    report.prompt_tokens = meter.prompt_tokens - before[1]
    report.seconds = round(meter.seconds - before[2], 2)
    return report


async def learn_conversation(
    records: Sequence[MessageRecord],
    conversation_id: str,
    *,
    service: MemoryService,
    scopes: list[Scope],
    complete: Complete,
    count_text: CountText,
    window: int,
    count_request: CountRequest | None = None,
    start_snapshot: Snapshot | None = None,
    progress: LearnProgress | None = None,
) -> PassReport:
    """`/learn`: claim and scan like reflection, then one curation call with the session's
    memory diff and the waiting suggestions. Any failure or interruption before it
    completes (a queue that cannot be read included) releases the claim."""
    report = PassReport(conversation_id)
    marks = Watermarks(service.layout)
    claim: Claim | None = None
    parts = 0
    try:
        claim = marks.claim(conversation_id, records)
    except ClaimUnavailable:
        report.nothing_new = True
    try:
        if claim is not None:
            _note_claim(report, claim)
            parts = await _scan_claim(
                claim,
                report,
                service=service,
                scopes=scopes,
                complete=complete,
                count_text=count_text,
                window=window,
                count_request=count_request,
                actor=LEARNER_ID,
                progress=progress,
            )
        if progress is not None:
            progress(parts + 1, parts + 1, "Reviewing memory as a whole")
        waiting = service.queue.pending()
        now = service.store.snapshot(scopes, assign_ids=False)
        result = await run_curation(
            service=service,
            scopes=scopes,
            complete=complete,
            diff=memory_diff(start_snapshot, now),
            waiting=waiting,
            room=Room(window, count_request or approximate(count_text)),
        )
        report.queued += result.queued
        report.refused += result.refused
    except BaseException:
        if claim is not None:
            report.released = marks.release(claim)
        raise
    return report
