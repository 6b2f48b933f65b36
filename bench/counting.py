"""Preparing the next request of a long conversation: incremental counting vs a full recount.

The history is ~300 messages and ~100K tokens with tool calls and large tool results. The
incremental figure is what Brim pays per turn: one message appended, the request counted by a
counter that has seen the rest. The full recount is a fresh counter over freshly loaded
messages (no cached hashes), which is what counting without the cache would cost every turn.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench import format_table
from engine.messages import Message, ToolCall, assistant, system, tool_result, user
from engine.tokens import TokenCounter

MESSAGES = 300
INCREMENTAL_REPS = 40
FULL_REPS = 5

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} in the workspace",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "query": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read_file", "list_dir", "grep", "write_file", "run_tests")
]

_WORDS = [
    "the",
    "context",
    "window",
    "engine",
    "request",
    "token",
    "counter",
    "model",
    "message",
    "tool",
    "result",
    "summary",
    "compaction",
    "budget",
    "server",
    "slot",
    "cache",
    "prefix",
    "latency",
    "agent",
    "workspace",
    "file",
    "function",
    "return",
    "value",
    "error",
    "retry",
    "stream",
    "delta",
    "usage",
    "prompt",
    "window",
    "ratio",
    "calibrate",
]
_CODE = [
    "def handle(request):",
    "    if not request.ok:",
    "        raise ServerError(request.status)",
    "    for item in request.items:",
    "        total += len(item.payload)",
    "    return {'status': 200, 'items': total}",
    '    logger.info("processed %d items", total)',
]


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{i:4d}  {rng.choice(_CODE)}" for i in range(lines))


def build_history(messages: int = MESSAGES, seed: int = 7) -> list[Message]:
    """A deterministic agent conversation: questions, tool calls, big results, answers."""
    rng = random.Random(seed)
    history: list[Message] = [system(_prose(rng, 120))]
    turn = 0
    while len(history) < messages:
        turn += 1
        history.append(user(_prose(rng, rng.randint(20, 80))))
        call = ToolCall(
            id=f"call_{turn}", name="read_file", arguments=f'{{"path": "src/mod_{turn}.py"}}'
        )
        history.append(assistant("", tool_calls=(call,)))
        history.append(tool_result(call, _code(rng, rng.randint(60, 110))))
        history.append(assistant(_prose(rng, rng.randint(60, 160))))
    return history[:messages]


def _fresh(messages: list[Message]) -> list[Message]:
    """The same messages as a new load from the store would give: no hash cached yet."""
    return [dataclasses.replace(m) for m in messages]


def measure(label: str, make_counter: Callable[[], TokenCounter]) -> dict[str, Any]:
    history = build_history()
    rng = random.Random(11)

    counter = make_counter()
    tokens = counter.count_request(history, TOOLS)  # the conversation so far, already seen
    incremental: list[float] = []
    running = list(history)
    for _ in range(INCREMENTAL_REPS):
        running.append(user(_prose(rng, 40)))
        start = time.perf_counter()
        counter.count_request(running, TOOLS)
        incremental.append(time.perf_counter() - start)

    full: list[float] = []
    target = [*history, user(_prose(rng, 40))]
    for _ in range(FULL_REPS):
        loaded = _fresh(target)
        scratch = make_counter()
        start = time.perf_counter()
        scratch.count_request(loaded, TOOLS)
        full.append(time.perf_counter() - start)

    inc_ms = statistics.median(incremental) * 1000
    full_ms = statistics.median(full) * 1000
    return {
        "case": label,
        "messages": len(history) + 1,
        "tokens": tokens,
        "incremental_ms": inc_ms,
        "full_recount_ms": full_ms,
        "speedup_x": full_ms / inc_ms if inc_ms > 0 else None,
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per counter: preparing the next request, incrementally versus recounting."""
    return [
        {
            "measure": f"count the next request, {r['case']}, {r['messages']} messages (ms)",
            "brim": r["incremental_ms"],
            "baseline": r["full_recount_ms"],
            "baseline is": "recount every message",
        }
        for r in rows
    ]


def main() -> list[dict[str, Any]]:
    return [
        measure("heuristic (llama3.1:8b)", lambda: TokenCounter("llama3.1:8b")),
        measure("tiktoken o200k (gpt-oss:20b)", lambda: TokenCounter("gpt-oss:20b")),
    ]


if __name__ == "__main__":
    print(format_table(main()))
