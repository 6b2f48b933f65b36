"""Sampling settings for the bundled model: plain questions with known answers, asked through
Brim's own request (the default agent's system prompt and tools) on the real embedded engine.

Each candidate setting answers the same questions, one fresh conversation per question, with
a fixed seed per question so a run repeats. An answer counts as right when it holds the
expected word. "Brim default" is what every agent that names none carries, the bundled one
included (engine/providers/sampling.py); "engine default" is what vLLM samples with when
nothing is sent and the model folder names nothing (temperature 1.0, no cut, no penalty).

    python -m bench sampling --details          # minutes on two cores
    SAMPLING_SEEDS=2 python -m bench sampling   # more seeds per question (default 1)
    SAMPLING_CANDIDATES="greedy;greedy, penalty" python -m bench sampling   # only these

Measured on SmolLM2-135M-Instruct Q4_1 (embedded, 2 threads, one seed per question, answers
capped at 48 tokens; `python -m bench sampling --details`, the last row with
`SAMPLING_CANDIDATES="greedy, penalty"`), right answers of 10 (the answer holds the
expected word):

    candidate         temperature/top_p/top_k/min_p/repeat_penalty   right
    greedy            0   / 1   / off / 0    / 1                     10
    0.2, penalty      0.2 / 0.9 / 40  / 0.05 / 1.1                   8
    0.2, no penalty   0.2 / 0.9 / 40  / 0.05 / 1                     8
    warm              0.7 / 0.9 / 40  / 0.05 / 1.1                   4
    engine default    1   / 1   / off / 0    / 1                     2
    greedy, penalty   0   / 1   / off / 0    / 1.1                   8

The word is a generous judge: greedy's spider answer says "typically four legs" before it
names eight. The engine default answered "What is the capital of France?" with
"L'Agenier, an addendum for Sir D'Artélebus. Her embarkance." and "What is the opposite of
hot?" with "upfront mercy"; the penalty turned "2 + 2 = 4" into "2 + 0 = 2". Brim's default
(temperature 0, no penalty, the cuts of the 0.2 rows) samples exactly as "greedy": at
temperature 0 llama.cpp's chain is the penalty, then the likeliest token, and the cuts are
not in it.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import DeltaEvent, Event
from engine.paths import BrimPaths
from engine.providers.embedded import EmbeddedProvider
from engine.providers.sampling import BRIM_DEFAULTS, Sampling
from engine.session import ChatSession

MAX_TOKENS = 48
WINDOW = 8192
# Each question with the word a right answer holds (any of them).
QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What is the capital of France?", ("paris",)),
    ("What is 2 plus 2?", ("4", "four")),
    ("What colour is the sky on a clear day?", ("blue",)),
    ("How many days are in a week?", ("7", "seven")),
    ("What is the opposite of hot?", ("cold",)),
    ("Which planet do we live on?", ("earth",)),
    ("What is the capital of Japan?", ("tokyo",)),
    ("How many legs does a spider have?", ("8", "eight")),
    ("What do bees make?", ("honey",)),
    ("What is frozen water called?", ("ice",)),
)
CANDIDATES: dict[str, Sampling] = {
    "Brim default": BRIM_DEFAULTS,
    "greedy": Sampling(temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0),
    "greedy, penalty": Sampling(temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.1),
    "0.2, penalty": Sampling(temperature=0.2, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.1),
    "0.2, no penalty": Sampling(
        temperature=0.2, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.0
    ),
    "warm": Sampling(temperature=0.7, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.1),
    "engine default": Sampling(temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0),
}


class KeptProvider(EmbeddedProvider):
    """One loaded model for every conversation: a session's close leaves it running."""

    async def aclose(self) -> None:
        return None

    async def shut(self) -> None:
        await super().aclose()


@dataclass
class Asked:
    candidate: str
    question: str
    seed: int
    answer: str
    right: bool


def is_right(answer: str, words: tuple[str, ...]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}\b", answer.lower()) for w in words)


async def ask(provider: KeptProvider, home: Path, sampling: Sampling, question: str) -> str:
    agent = replace(default_agent(), num_ctx=WINDOW, max_tokens=MAX_TOKENS).with_changes(
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        top_k=sampling.top_k,
        min_p=sampling.min_p,
        repeat_penalty=sampling.repeat_penalty,
        seed=sampling.seed,
    )
    events: list[Event] = []
    session = ChatSession(agent, BrimPaths.resolve(home), events.append, provider=provider)
    await session.start()
    try:
        await session.send(question)
    finally:
        await session.close()
    return "".join(e.text for e in events if isinstance(e, DeltaEvent)).strip()


async def run(seeds: int, only: list[str]) -> list[Asked]:
    out: list[Asked] = []
    provider = KeptProvider(n_ctx=WINDOW)
    try:
        with tempfile.TemporaryDirectory(prefix="brim-bench-sampling-") as tmp:
            for name, sampling in CANDIDATES.items():
                if only and name not in only:
                    continue
                for index, (question, words) in enumerate(QUESTIONS):
                    for s in range(seeds):
                        seed = 1000 + index * 10 + s
                        text = await ask(
                            provider, Path(tmp), replace(sampling, seed=seed), question
                        )
                        out.append(Asked(name, question, seed, text, is_right(text, words)))
                        print(f"  {name}: {question} -> {text[:70]!r}", file=sys.stderr)
    finally:
        await provider.shut()
    return out


def main() -> list[dict[str, Any]]:
    seeds = int(os.environ.get("SAMPLING_SEEDS", "1"))
    only = [n.strip() for n in os.environ.get("SAMPLING_CANDIDATES", "").split(";") if n.strip()]
    asked = asyncio.run(run(seeds, only))
    return [
        {
            "candidate": a.candidate,
            "question": a.question,
            "seed": a.seed,
            "right": a.right,
            "answer": a.answer[:80],
        }
        for a in asked
    ]


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Right answers per candidate, beside what the engine's own default gets."""
    right: dict[str, int] = {}
    total: dict[str, int] = {}
    for row in rows:
        right[row["candidate"]] = right.get(row["candidate"], 0) + int(row["right"])
        total[row["candidate"]] = total.get(row["candidate"], 0) + 1
    baseline = right.get("engine default", 0)
    return [
        {
            "measure": f"{name} ({CANDIDATES[name].describe()}): right answers of {total[name]}",
            "brim": count,
            "baseline": baseline,
            "baseline is": "vLLM's own sampling (temperature 1.0, no cut, no penalty)",
        }
        for name, count in right.items()
    ]
