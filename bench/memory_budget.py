"""Memory's cost on the bundled model (the embedded engine, the default agent): one
compaction's extraction and one close-time reflection of a 5-message conversation. Prints
seconds, model requests and tokens, and the extraction request the model was sent.

    python -m bench.memory_budget          # minutes on a CPU; not run by `python -m bench`

Each figure is read from what Brim logs (engine/memory/requests.py's meter), the compaction's
seconds from the session's own "suggesting memories" → "compacting" states.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import CompactionEvent, Event, StateEvent
from engine.memory import requests as memory_requests
from engine.messages import Message, assistant, user
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.store import Store

WINDOW = 2048
STATED = "My car is a blue 2014 Skoda."
CONVERSATION = [
    user("I am vegetarian."),
    assistant("Noted, I will keep that in mind."),
    user("My car is a blue 2014 Skoda. I work night shifts at the hospital."),
    assistant("Thanks for telling me."),
    user("My project deadline is March 3."),
]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        print(f"{time.monotonic():.0f} log: {record.getMessage()[:300]}", file=sys.stderr)


def _record_requests(sent: list[list[Message]]) -> None:
    """Keep what each memory request sends (the bench's own instrument)."""
    original = memory_requests.Meter.wrap

    def wrap(self: memory_requests.Meter, complete: Any, count: Any) -> Any:
        async def recording(messages: list[Message], tools: Any, max_tokens: int) -> Any:
            sent.append(list(messages))
            print(f"request sent (max_tokens {max_tokens}, {len(tools)} tools):", file=sys.stderr)
            for m in messages:
                print(f"--- {m.role}\n{m.content}", file=sys.stderr, flush=True)
            return await complete(messages, tools, max_tokens)

        return original(self, recording, count)

    memory_requests.Meter.wrap = wrap  # type: ignore[method-assign]


def compaction(home: Path) -> dict[str, Any]:
    """A chat on a 2,048-token window until its first compaction finishes."""
    events: list[tuple[float, Event]] = []
    sent: list[list[Message]] = []
    _record_requests(sent)
    lines = _Lines()
    logging.getLogger("engine.memory").addHandler(lines)
    logging.getLogger("engine.memory").setLevel(logging.INFO)
    agent = default_agent().with_changes(num_ctx=WINDOW, max_tokens=24)
    turns = [
        f"Note {i}: build server {i} runs job alpha-{i} every {i + 3} minutes and writes its "
        f"log to /var/log/job{i}.log. " * 8 + "Acknowledge briefly."
        for i in range(16)
    ]
    turns[0] = f"{STATED} {turns[0]}"

    def hear(event: Event) -> None:
        events.append((time.monotonic(), event))
        if isinstance(event, StateEvent | CompactionEvent):
            print(f"{time.monotonic():.0f} {event}", file=sys.stderr, flush=True)

    async def run() -> None:
        session = ChatSession(agent, BrimPaths.resolve(home), hear, memory=True)
        await session.start()
        for n, text in enumerate(turns):
            await session.send(text)
            print(f"turn {n + 1} done at {time.monotonic():.0f}", file=sys.stderr, flush=True)
            if any(isinstance(e, CompactionEvent) and e.phase == "finished" for _, e in events):
                break
        await session.close()

    asyncio.run(run())
    states = [(t, e.state) for t, e in events if isinstance(e, StateEvent)]
    start = next(t for t, s in states if s == "suggesting memories")
    end = next(t for t, s in states if s == "compacting" and t >= start)
    return {
        "extraction seconds": round(end - start, 1),
        "log": [line for line in lines.lines if "extraction before compaction" in line],
        "first request sent": [(m.role, m.content) for m in sent[0]] if sent else None,
    }


def reflection(home: Path) -> dict[str, Any]:
    paths = BrimPaths.resolve(home).ensure()
    with Store.open(paths.db_path) as store:
        conversation = store.create_conversation("default")
        for message in CONVERSATION:
            store.append_message(conversation, message)
    cmd = [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "memory", "reflect"]
    cmd += ["--conversation", conversation, "--json"]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.monotonic() - started
    log = (paths.logs_dir / "memory.log").read_text(encoding="utf-8").splitlines()
    return {
        "command": " ".join(cmd[1:]),
        "exit": done.returncode,
        "stderr": done.stderr[-400:],
        "wall seconds (model load included)": round(seconds, 1),
        "report": json.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else None,
        "log": [line.split(" ", 3)[-1] for line in log],
    }


if __name__ == "__main__":
    which = sys.argv[1:] or ["compaction", "reflection"]
    with tempfile.TemporaryDirectory(prefix="brim-bench-memory-budget-") as tmp:
        for name in which:
            result = {"compaction": compaction, "reflection": reflection}[name](Path(tmp) / name)
            print(f"== {name}")
            print(json.dumps(result, indent=2, ensure_ascii=False))
