"""Small models keep the task: the bundled chat models on the real embedded engine, Brim's
ladder beside a sliding window that keeps the newest messages (what an agent without a ladder
does).

The script (bench/_small_models_score.py): 20 turns in which the user states six facts (a
trip to Lisbon with a sister in May, a budget, an allergy, a name, arriving by train, a hotel
near Alfama) between eight ordinary questions that carry a passage each, then asks about each
fact. Before the first such question Brim's conversation has compacted at least twice (the
window does it; `/compact` makes up the count when it did not). Printed per model and window,
Brim beside the sliding window:

- the facts still in the request sent with each question (target 6 of 6), read from the
  messages the embedded provider was given;
- the facts the model answered correctly (the model's own ability, beside what it was sent);
- the answers in summary voice: headings, "(none)", "The user is asking", a bracketed
  answer, transcript markup (target 0);
- the suggestions memory queued that quote one of the six statements (target 6).

Then, per model: 20 ordinary questions (arithmetic, a fact from the conversation, a list)
after a compaction, counting answers with checkpoint artefacts, beside the same 20 asked in
a window large enough that nothing compacts (the model's own floor).

    python -m bench small_models                 # minutes on two cores (progress on stderr)
    python -m bench small_models --details       # also every question and its answer
    SMALL_MODELS_WINDOWS=1024 python -m bench small_models      # one window
    SMALL_MODELS_MODELS=SmolLM2-135M-Instruct.Q4_1 python -m bench small_models   # one model
    SMALL_MODELS_PLAIN=0 python -m bench small_models           # skip the 20 questions
    SMALL_MODELS_WINDOWS=none python -m bench small_models      # the 20 questions only

Answers are greedy (temperature 0) and capped at MAX_TOKENS, so runs repeat.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._small_models_score import (
    EXPLICIT,
    FACTS,
    PLAIN_QUESTIONS,
    Turn,
    fact_answered,
    fact_present,
    scripted_turns,
    statements_queued,
    summary_voice,
)
from engine.config import default_agent
from engine.context.summarizer import is_compaction_request
from engine.events import CompactionEvent, Event
from engine.memory.service import MemoryService
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.prompt import system_prompt
from engine.providers import bundled_models
from engine.providers.base import ChatOptions, StreamDone, StreamItem, TextDelta
from engine.providers.embedded import EmbeddedProvider
from engine.session import ChatSession

WINDOWS = (1024, 2048)
# The 20 ordinary questions after a compaction: on 2,048 tokens the setup below never
# outgrew the tail a compaction keeps, so `/compact` had nothing to do and the questions
# came after none; on 1,024 the window compacts in the setup, or `/compact` can.
PLAIN_WINDOW = 1024
FLOOR_WINDOW = 8192  # the same 20 where nothing compacts
MAX_TOKENS = 96
SLIDING_SHARE = 0.75  # the sliding window keeps the newest messages under this share
MIN_COMPACTIONS = 2
# The passages each ordinary question carries, per window. Answers are capped at MAX_TOKENS
# whatever the window, so with one passage a turn the 2,048 window compacted once in the
# setup, and `/compact` then found nothing older than the tail it keeps; with three it still
# compacted once, at the setup's last turn (SmolLM2: requests reached 1,561 tokens by then,
# 795 after it). Six passages a turn (about 270 tokens with the answer) fill the window
# about twice over in the setup, so it compacts twice before the questions.
PASSAGES_PER_QUESTION = {1024: 1, 2048: 6}
PLAIN_SETUP = 14  # the script's turns before its first question: facts and passages


@dataclass
class Sent:
    """One request the embedded provider was given, and what the model answered."""

    compaction: bool
    messages: list[Message]
    answer: str = ""


class RecordingProvider(EmbeddedProvider):
    """The embedded engine, keeping every request it is given with the answer it streamed."""

    def __init__(self, log: list[Sent], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        first = messages[0].content if messages and messages[0].role == "system" else ""
        last = messages[-1].content if messages else ""
        sent = Sent(is_compaction_request(first, last), list(messages))
        self.log.append(sent)
        parts: list[str] = []
        started, usage = time.perf_counter(), None
        try:
            async for item in super().stream_chat(model, messages, options):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
                elif isinstance(item, StreamDone):
                    usage = item.usage
                yield item
        finally:
            sent.answer = "".join(parts)
            # Each request as it lands: where a long run spends its time.
            kind = "compaction" if sent.compaction else first[:24].replace("\n", " ")
            tokens = f"{usage.prompt_tokens}+{usage.completion_tokens}" if usage else "-"
            took = time.perf_counter() - started
            print(f"  request [{kind}] {tokens} tokens, {took:.1f}s", file=sys.stderr, flush=True)


@dataclass
class Asked:
    question: str
    fact: int | None  # the fact asked about (None: an ordinary question)
    sent: list[str]  # what the model was sent before the question
    answer: str


@dataclass
class Run:
    variant: str  # brim | sliding
    asked: list[Asked] = field(default_factory=list)
    compactions: int = 0  # before the first question about a fact
    forced: int = 0  # of which `/compact` made up
    total: int = 0  # compactions in the whole run
    quotes: list[str] = field(default_factory=list)  # the suggestions queued
    wall_s: float = 0.0


def answering_request(log: list[Sent], question: str) -> Asked | None:
    """The last request of a turn that put `question` to the model (not a compaction's, not
    memory's): what it was sent before the question, and the answer."""
    for sent in reversed(log):
        last = sent.messages[-1] if sent.messages else None
        if sent.compaction or last is None or last.role != "user" or question not in last.content:
            continue
        before = [m.content for m in sent.messages[:-1]]
        before.append(last.content.replace(question, ""))  # a nudge joined to the question
        return Asked(question, None, before, sent.answer)
    return None


def _agent(model: str, window: int) -> Any:
    return default_agent().with_changes(
        model=model, num_ctx=window, max_tokens=MAX_TOKENS, temperature=0.0
    )


async def run_brim(
    model: str, window: int, turns: list[Turn], *, compact_at: int, compactions: int
) -> Run:
    """The turns through Brim's session (memory on), with at least `compactions` before
    turn `compact_at` (`/compact` makes up what the window did not do)."""
    run, log, events = Run("brim"), [], []
    provider = RecordingProvider(log, model_path=model, n_ctx=window)
    with tempfile.TemporaryDirectory(prefix="brim-bench-small-") as home:
        paths = BrimPaths.resolve(Path(home))
        session = ChatSession(
            _agent(model, window), paths, events.append, provider=provider, memory=True
        )
        started = time.perf_counter()
        await session.start()
        for index, turn in enumerate(turns):
            if index == compact_at:
                run.compactions = _compactions(events)
                while run.compactions < compactions and run.forced < compactions + 1:
                    await session.send("/compact")
                    run.forced += 1
                    run.compactions = _compactions(events)
            mark = len(log)
            await session.send(turn.text)
            _progress(model, window, "brim", index, len(turns))
            _keep(run, answering_request(log[mark:], turn.text), turn)
        run.wall_s = time.perf_counter() - started
        run.total = _compactions(events)
        await session.close()
        run.quotes = [s.quote or s.statement for s in MemoryService.for_paths(paths).pending()]
    return run


def _keep(run: Run, found: Asked | None, turn: Turn) -> None:
    """The turn's question, what was sent with it and the answer (a turn that failed before
    it reached the model is kept with nothing sent and no answer)."""
    found = found or Asked(turn.text, None, [], "")
    found.fact = turn.asks
    run.asked.append(found)


def _compactions(events: list[Event]) -> int:
    return sum(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events)


async def run_sliding(model: str, window: int, turns: list[Turn]) -> Run:
    """The script with the newest messages that fit SLIDING_SHARE of the window."""
    run, log = Run("sliding"), []
    provider = RecordingProvider(log, model_path=model, n_ctx=window)
    tokenizer = provider.segment_tokenizer(model)
    assert tokenizer is not None
    head = system(system_prompt(default_agent().system_prompt, workspace=None, tools=False))
    history: list[Message] = []
    budget = int(window * SLIDING_SHARE)
    started = time.perf_counter()
    try:
        for index, turn in enumerate(turns):
            history.append(user(turn.text))
            while len(history) > 1 and tokenizer.count_request([head, *history]) > budget:
                history.pop(0)
            while history and history[0].role != "user":
                history.pop(0)  # strict templates start with the user
            options = ChatOptions(max_tokens=MAX_TOKENS, temperature=0.0)
            async for _ in provider.stream_chat(model, [head, *history], options):
                pass
            history.append(assistant(log[-1].answer))
            _progress(model, window, "sliding", index, len(turns))
            _keep(run, answering_request(log[-1:], turn.text), turn)
    finally:
        await provider.aclose()
    run.wall_s = time.perf_counter() - started
    return run


def _progress(model: str, window: int, variant: str, turn: int, total: int) -> None:
    print(f"{model} {window}: {variant}: turn {turn + 1}/{total}", file=sys.stderr, flush=True)


def fact_rows(model: str, window: int, brim: Run, sliding: Run) -> list[dict[str, Any]]:
    """The side-by-side figures of the fact script on one model and window."""

    def present(run: Run) -> int:
        return sum(fact_present(a.sent, FACTS[a.fact]) for a in _about_facts(run))

    def answered(run: Run) -> int:
        return sum(fact_answered(a.answer, FACTS[a.fact]) for a in _about_facts(run))

    def voice(run: Run) -> int:
        return sum(bool(summary_voice(a.answer)) for a in _about_facts(run))

    where = f"{model}, {window}-token window"
    base = f"sliding window at {round(SLIDING_SHARE * 100)}% (newest messages)"
    compacted = f"{brim.compactions} compactions ({brim.forced} by /compact)"
    return [
        {
            "measure": f"{where}: facts in the request with each question (of 6; {compacted})",
            "brim": present(brim),
            "baseline": present(sliding),
            "baseline is": base + "; target: 6",
        },
        {
            "measure": f"{where}: facts answered correctly (of 6)",
            "brim": answered(brim),
            "baseline": answered(sliding),
            "baseline is": base,
        },
        {
            "measure": f"{where}: answers in summary voice (of 6)",
            "brim": voice(brim),
            "baseline": voice(sliding),
            "baseline is": base + "; target: 0",
        },
        {
            "measure": f"{where}: suggestions queued quoting the {len(EXPLICIT)} explicit "
            f"statements (name, allergy; {len(brim.quotes)} queued in all, quoting "
            f"{statements_queued(brim.quotes)} of the 6 facts)",
            "brim": statements_queued(brim.quotes, EXPLICIT),
            "baseline": len(EXPLICIT),
            "baseline is": "the target: one per explicit statement",
        },
    ]


def _about_facts(run: Run) -> list[Asked]:
    return [a for a in run.asked if a.fact is not None]


def _artefacts(run: Run) -> int:
    """Answers to the ordinary questions (after the setup turns) in summary voice."""
    return sum(bool(summary_voice(a.answer)) for a in run.asked[PLAIN_SETUP:])


def plain_rows(model: str, after: Run, floor: Run) -> list[dict[str, Any]]:
    """Artefacts in the 20 ordinary questions, after a compaction beside without one."""
    count = len(PLAIN_QUESTIONS)
    return [
        {
            "measure": f"{model}: {count} ordinary questions after a compaction, answers with "
            f"checkpoint artefacts ({PLAIN_WINDOW}-token window, {after.compactions} "
            "compactions before them)",
            "brim": _artefacts(after),
            "baseline": _artefacts(floor),
            "baseline is": f"the same {count} without a compaction ({FLOOR_WINDOW}-token "
            f"window, {floor.total} compactions): the model's own floor",
        }
    ]


def detail_rows(model: str, window: int | str, run: Run) -> list[dict[str, Any]]:
    """Every turn: the question, whether its fact was sent and answered, the answer."""
    return [
        {
            "detail": True,
            "model": model,
            "window": window,
            "variant": run.variant,
            "question": a.question,
            "fact in request": None if a.fact is None else fact_present(a.sent, FACTS[a.fact]),
            "answered": None if a.fact is None else fact_answered(a.answer, FACTS[a.fact]),
            "summary voice": ",".join(summary_voice(a.answer)) or "",
            "answer": " ".join(a.answer.split())[:100],
        }
        for a in run.asked
    ]


def plain_turns() -> list[Turn]:
    return scripted_turns()[:PLAIN_SETUP] + [Turn(q) for q in PLAIN_QUESTIONS]


async def run_plain(model: str) -> tuple[Run, Run]:
    """The 20 questions after `/compact` on PLAIN_WINDOW, and in FLOOR_WINDOW where nothing
    compacts."""
    turns = plain_turns()
    after = await run_brim(model, PLAIN_WINDOW, turns, compact_at=PLAIN_SETUP, compactions=1)
    floor = await run_brim(model, FLOOR_WINDOW, turns, compact_at=PLAIN_SETUP, compactions=0)
    return after, floor


def _chosen(variable: str, default: list[str]) -> list[str]:
    picked = [x.strip() for x in os.environ.get(variable, "").split(",") if x.strip()]
    return picked or default


def main() -> list[dict[str, Any]]:
    """The figures per model and window, then one row per question (marked `detail`)."""
    installed = [m.name for m in bundled_models.chat_models()]  # a base model does not chat
    models = _chosen("SMALL_MODELS_MODELS", installed)
    unknown = [m for m in models if m not in installed]
    if unknown:  # every turn would fail, and the figures would read as a clean run
        raise SystemExit(
            f"small_models: not installed: {', '.join(unknown)} (installed: "
            f"{', '.join(installed) or 'none'})"
        )
    chosen = _chosen("SMALL_MODELS_WINDOWS", [str(w) for w in WINDOWS])
    windows = [] if chosen == ["none"] else [int(w) for w in chosen]  # none: the 20 only
    plain = os.environ.get("SMALL_MODELS_PLAIN", "1") != "0"
    out: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    from bench import format_table

    for model in models:
        for window in windows:
            turns = scripted_turns(PASSAGES_PER_QUESTION.get(window, max(1, window // 700)))
            first_question = next(i for i, t in enumerate(turns) if t.asks is not None)
            brim = asyncio.run(
                run_brim(
                    model, window, turns, compact_at=first_question, compactions=MIN_COMPACTIONS
                )
            )
            sliding = asyncio.run(run_sliding(model, window, turns))
            rows = fact_rows(model, window, brim, sliding)
            out.extend(rows)
            details += [*detail_rows(model, window, brim), *detail_rows(model, window, sliding)]
            print(format_table(rows), file=sys.stderr, flush=True)
        if plain:
            after, floor = asyncio.run(run_plain(model))
            rows = plain_rows(model, after, floor)
            out.extend(rows)
            details += [*detail_rows(model, "after", after), *detail_rows(model, "floor", floor)]
            print(format_table(rows), file=sys.stderr, flush=True)
    return out + details


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The side-by-side figures (the per-question rows stay in --details)."""
    return [row for row in rows if not row.get("detail")]


if __name__ == "__main__":
    from bench import format_table

    everything = main()
    print(format_table(summarize(everything)))
    print()
    print(format_table([r for r in everything if r.get("detail")]))
