"""How long the user waits at the turn that compacts: time to first token from the user's
Enter, against an ordinary turn's, on the embedded engine (the bundled model).

The same scripted reports (bench/kv_reuse_quick.py's, about 200 tokens each) are sent
through a headless-style session twice:

- **in the turn**: compaction runs when the user's next message would cross the trigger,
  inside that turn (`compact_ahead=False`): the user waits for the memory extraction,
  the checkpoint request and the rebuilt prompt's evaluation;
- **ahead**: the session compacts right after the answer that brings the conversation near
  the trigger, while the user reads, and has the engine evaluate the rebuilt prompt
  (engine/session/ahead.py). The user is taken to read for as long as that takes; the
  time it took is printed too, and what a message sent at once would wait.

    python -m bench compaction_latency       # a few minutes on two cores
    COMPACTION_LATENCY_WINDOW=4096 python -m bench compaction_latency
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.kv_reuse_quick import report_turns
from engine.config import default_agent
from engine.events import CompactionEvent, DeltaEvent, Event
from engine.paths import BrimPaths
from engine.providers.embedded import EmbeddedProvider
from engine.session import ChatSession

TURNS = 14
MAX_TOKENS = 32


@dataclass
class Turn:
    first_token_s: float
    compacted_inside: bool  # a compaction ran between the Enter and the first token
    after_compaction: bool  # the first turn after a compaction (ahead or inside)


@dataclass
class Run:
    turns: list[Turn] = field(default_factory=list)
    ahead_s: list[float] = field(default_factory=list)  # each compaction ahead, start to warm


async def _run(window: int, *, ahead: bool) -> Run:
    run = Run()
    state: dict[str, Any] = {"sent": 0.0, "first": None, "compacted": False}

    def sink(event: Event) -> None:
        if isinstance(event, DeltaEvent) and state["first"] is None:
            state["first"] = time.perf_counter()
        elif isinstance(event, CompactionEvent) and event.phase == "finished":
            state["compacted"] = True

    agent = default_agent().with_changes(num_ctx=window, max_tokens=MAX_TOKENS)
    provider = EmbeddedProvider(n_ctx=window)
    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(
            agent, BrimPaths.resolve(Path(home)), sink, provider=provider, memory=True,
            compact_ahead=ahead,
        )  # fmt: skip
        await session.start()
        after = False
        for i, text in enumerate(report_turns(TURNS)):
            if ahead:
                began = time.perf_counter()
                running = session._ahead is not None and session._ahead.running
                await session._settle_ahead()  # the user reads meanwhile
                if running:
                    run.ahead_s.append(time.perf_counter() - began)
                after = state["compacted"]
            state.update(first=None, compacted=False)
            sent = time.perf_counter()
            await session.send(text)
            first = state["first"] or time.perf_counter()
            inside = bool(state["compacted"]) and not ahead
            run.turns.append(Turn(first - sent, inside, after or inside))
            after = False
            print(
                f"{window} {'ahead' if ahead else 'in the turn'}: turn {i + 1}/{TURNS} "
                f"first token {first - sent:.1f} s{' (compacted)' if inside else ''}",
                file=sys.stderr,
                flush=True,
            )
            await asyncio.sleep(0)  # a compaction ahead starts here
        await session.close()
    return run


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def main() -> list[dict[str, Any]]:
    window = int(os.environ.get("COMPACTION_LATENCY_WINDOW", "2048"))
    inside = asyncio.run(_run(window, ahead=False))
    ahead = asyncio.run(_run(window, ahead=True))
    ordinary = [t.first_token_s for t in inside.turns[1:] if not t.after_compaction]
    ordinary_ahead = [t.first_token_s for t in ahead.turns[1:] if not t.after_compaction]
    compacting = [t.first_token_s for t in inside.turns if t.compacted_inside]
    after_ahead = [t.first_token_s for t in ahead.turns if t.after_compaction]
    where = f"{window}-token window, {TURNS} reports of ~200 tokens, embedded engine"
    base = "an ordinary turn's first token (median, same run)"
    return [
        {
            "measure": f"{where}: first token at the turn that compacts, compaction in the turn "
            f"({len(compacting)} turns)",
            "brim": _median(compacting),
            "baseline": _median(ordinary),
            "baseline is": base,
        },
        {
            "measure": f"{where}: first token at the turn after a compaction ahead "
            f"({len(after_ahead)} turns; target <= 2x)",
            "brim": _median(after_ahead),
            "baseline": _median(ordinary_ahead),
            "baseline is": base,
        },
        {
            "measure": f"{where}: a compaction ahead, answer to warm cache (the reading time "
            "a message sent at once would wait)",
            "brim": _median(ahead.ahead_s),
            "baseline": _median(ordinary_ahead),
            "baseline is": base,
        },
    ]


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows


if __name__ == "__main__":
    from bench import format_table

    print(format_table(main()))
