"""Brim's ladder against a naive sliding window, on the real embedded engine.

The same scripted 30-turn session runs twice on a 1024-token window: once through Brim's
session (stable prefix; clear, compact and trim only when due) and once with a sliding
window that drops the oldest messages to stay under a budget before every request (what an
agent without a ladder does). Printed side by side: the share of prompt tokens the engine
reused from its KV cache, and the total time it spent evaluating prompts.

    python -m bench.kv_reuse            # several minutes on two cores (progress on stderr)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.context.compaction import SUMMARIZER_SYSTEM
from engine.context.guided import GUIDED_SYSTEM
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, StreamDone, StreamItem, TextDelta, Usage
from engine.providers.embedded import EmbeddedProvider
from engine.session import ChatSession

WINDOW = 1024
TURNS = 30
MAX_TOKENS = 24
SLIDING_BUDGET = int(WINDOW * 0.75)  # the naive agent keeps the newest messages under this
FREEFORM_PREFIX = SUMMARIZER_SYSTEM[:60]  # the whole-checkpoint prompt, before its fields


def is_compaction_request(messages: list[Message]) -> bool:
    first = messages[0].content if messages else ""
    return first == GUIDED_SYSTEM or first.startswith(FREEFORM_PREFIX)


def scripted_turns(count: int = TURNS) -> list[str]:
    return [
        f"Step {i}: the service on port {8000 + i} restarted at 0{i % 10}:15 after job "
        f"batch-{i} wrote {i * 37} records to /srv/data/part-{i}.csv. Acknowledge briefly."
        for i in range(count)
    ]


@dataclass
class Tally:
    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    prompt_eval_s: float = 0.0
    usages: list[Usage] = field(default_factory=list)

    def add(self, usage: Usage) -> None:
        self.requests += 1
        self.prompt_tokens += usage.prompt_tokens or 0
        self.cached_tokens += usage.cached_tokens or 0
        self.prompt_eval_s += usage.prompt_eval_s or 0.0
        self.usages.append(usage)

    def row(self, variant: str, wall_s: float) -> dict[str, Any]:
        share = self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
        return {
            "variant": variant,
            "requests": self.requests,
            "prompt tokens": self.prompt_tokens,
            "reused from KV cache": self.cached_tokens,
            "reused share": round(share, 3),
            "prompt eval s": round(self.prompt_eval_s, 2),
            "wall s": round(wall_s, 1),
        }


class RecordingProvider(EmbeddedProvider):
    """The embedded engine, tallying the usage of every request that lands: the agent's
    own requests in `tally`, the summarizer's (compaction) in `compaction`."""

    def __init__(self, tally: Tally, compaction: Tally | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tally = tally
        self.compaction = compaction or tally

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        summarizing = is_compaction_request(messages)
        async for item in super().stream_chat(model, messages, options):
            if isinstance(item, StreamDone):
                (self.compaction if summarizing else self.tally).add(item.usage)
            yield item


async def run_ladder(turns: list[str]) -> tuple[Tally, Tally, float]:
    tally, compaction = Tally(), Tally()
    provider = RecordingProvider(tally, compaction, n_ctx=WINDOW)
    agent = default_agent().with_changes(num_ctx=WINDOW, max_tokens=MAX_TOKENS)
    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(
            agent, BrimPaths.resolve(Path(home)), lambda _e: None, provider=provider
        )
        started = time.perf_counter()
        await session.start()
        for i, text in enumerate(turns):
            await session.send(text)
            _progress("ladder", i)
        wall = time.perf_counter() - started
        await session.close()
    return tally, compaction, wall


async def run_sliding(turns: list[str]) -> tuple[Tally, float]:
    tally = Tally()
    provider = RecordingProvider(tally, n_ctx=WINDOW)
    tokenizer = provider.segment_tokenizer("")
    assert tokenizer is not None
    head = system(default_agent().system_prompt)
    history: list[Message] = []
    started = time.perf_counter()
    try:
        for text in turns:
            history.append(user(text))
            # Slide: drop the oldest messages until the request fits the budget.
            while len(history) > 1 and tokenizer.count_request([head, *history]) > SLIDING_BUDGET:
                history.pop(0)
            parts: list[str] = []
            options = ChatOptions(max_tokens=MAX_TOKENS)
            async for item in provider.stream_chat("", [head, *history], options):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
            history.append(assistant("".join(parts)))
            _progress("sliding", len(tally.usages) - 1)
    finally:
        await provider.aclose()
    return tally, time.perf_counter() - started


def _progress(variant: str, turn: int) -> None:
    print(f"{variant}: turn {turn + 1}/{TURNS}", file=sys.stderr, flush=True)


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's requests, and with its compactions, beside the sliding window."""
    agent, compaction, sliding = rows
    base = f"sliding window, {sliding['requests']} requests"
    return [
        {
            "measure": f"{TURNS} turns in a {WINDOW}-token window: share of prompt read from KV",
            "brim": agent["reused share"],
            "baseline": sliding["reused share"],
            "baseline is": base,
        },
        {
            "measure": "the same: prompt evaluation, the agent's requests (s)",
            "brim": agent["prompt eval s"],
            "baseline": sliding["prompt eval s"],
            "baseline is": base,
        },
        {
            "measure": "the same: prompt evaluation with the compaction requests (s)",
            "brim": round(agent["prompt eval s"] + compaction["prompt eval s"], 2),
            "baseline": sliding["prompt eval s"],
            "baseline is": base,
        },
    ]


def main() -> list[dict[str, Any]]:
    turns = scripted_turns()
    ladder, compaction, ladder_wall = asyncio.run(run_ladder(turns))
    sliding, sliding_wall = asyncio.run(run_sliding(turns))
    base_eval = sliding.prompt_eval_s or 1e-9
    rows = [
        ladder.row("brim ladder: the agent's requests", ladder_wall),
        compaction.row("brim ladder: its compaction requests", 0.0),
        sliding.row("sliding window (baseline)", sliding_wall),
    ]
    for row, tally in zip(rows, (ladder, compaction, sliding), strict=True):
        row["eval time vs baseline"] = round(tally.prompt_eval_s / base_eval, 2)
    rows[1]["wall s"] = None  # included in the agent's wall time above
    return rows


if __name__ == "__main__":
    from bench import format_table

    print(format_table(main()))
