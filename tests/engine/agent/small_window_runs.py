"""A file-reading agent run through the real session and loop, against an engine double.

The double counts with the bundled model's vocabulary (tests/helpers/smollm2_vocab.py), so a file of
numbers costs more tokens per character than one of prose, as on a real engine. The scripted
model reads one file per user turn (`read_file`), then says it is fine; a request without
tools, or one that carries the summarizer's instructions, gets a checkpoint.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, default_agent
from engine.events import CompactionEvent, ErrorEvent, Event, NoticeEvent, TrimEvent, UsageEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeServer, FakeToolCall, RecordedRequest, Reply

CHECKPOINT = """## Goal
Audit the files one by one and say whether each is fine.
## Constraints & Preferences
None stated.
## Covered So Far
- file{n}.txt
## Progress
### Done
- read the files so far
### In Progress
- reading the next file
### Blocked
- nothing
## Key Decisions
- none
## Next Steps
- keep reading
## Critical Context
- none
"""

_TURN = re.compile(r"^Turn (\d+):")
_PROSE_WORDS = (
    "the a report shows that our team reviewed every section of this document and found "
    "nothing unusual in how the figures were gathered or explained"
)


def prose_file(seed: int, words: int = 700) -> str:
    rng = random.Random(seed)
    vocabulary = _PROSE_WORDS.split()
    lines = []
    for _ in range(words // 14):
        lines.append(" ".join(rng.choice(vocabulary) for _ in range(14)).capitalize() + ".")
    return "\n".join(lines) + "\n"


def numbers_file(seed: int, rows: int = 120) -> str:
    rng = random.Random(seed)
    lines = ["id,reading,delta,checksum"]
    for i in range(rows):
        lines.append(
            f"{i},{rng.uniform(0, 999):.4f},{rng.uniform(-9, 9):+.3f},{rng.randrange(16**8):08x}"
        )
    return "\n".join(lines) + "\n"


def workspace(
    tmp_path: Path,
    files: int,
    *,
    numbers_every: int = 0,
    numbers_from: int | None = None,
    rows: int = 120,
) -> Path:
    """`files` files of about 1,000-1,500 tokens: prose, or a CSV table of `rows` numbers
    (every `numbers_every`-th file, or every file from `numbers_from` on), which costs about
    twice the tokens per character."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(files):
        numbers = bool(numbers_every and i % numbers_every == numbers_every - 1)
        numbers = numbers or (numbers_from is not None and i >= numbers_from)
        text = numbers_file(i, rows) if numbers else prose_file(i)
        (ws / f"file{i}.txt").write_text(text, encoding="utf-8")
    return ws


def is_summary_request(body: dict[str, Any]) -> bool:
    """A compaction's request: the transcript as material, or (on the agent's own model)
    the conversation replayed with the checkpoint instruction after it."""
    messages = body.get("messages") or []
    return (
        not body.get("tools")
        or is_compaction(body)
        or any("You write checkpoints" in str(m.get("content") or "") for m in messages)
    )


def reader(files: int) -> Any:
    """The scripted model: one read_file per user turn, then a short verdict."""
    summaries = [0]

    def respond(request: RecordedRequest) -> Reply:
        body = request.body
        if is_summary_request(body):
            summaries[0] += 1
            return Reply(text=CHECKPOINT.replace("{n}", str(summaries[0])))
        messages = body["messages"]
        turn, start = 0, -1
        for i, message in enumerate(messages):
            found = (
                _TURN.match(str(message.get("content") or ""))
                if message["role"] == "user"
                else None
            )
            if found:
                turn, start = int(found.group(1)), i
        if any(m["role"] == "tool" for m in messages[start + 1 :]):
            return Reply(text="Noted; that file is fine.")
        return Reply(
            text="", tool_calls=[FakeToolCall("read_file", {"path": f"file{turn % files}.txt"})]
        )

    return respond


@dataclass
class Run:
    events: list[Event] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)  # the agent's, in order
    summaries: list[RecordedRequest] = field(default_factory=list)
    context_lines: list[str] = field(default_factory=list)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def errors(self) -> list[ErrorEvent]:
        return self.of(ErrorEvent)

    @property
    def trims(self) -> list[TrimEvent]:
        return self.of(TrimEvent)

    @property
    def compactions(self) -> list[CompactionEvent]:
        return [e for e in self.of(CompactionEvent) if e.phase == "finished"]

    @property
    def usages(self) -> list[UsageEvent]:
        return self.of(UsageEvent)

    @property
    def notices(self) -> list[str]:
        return [e.text for e in self.of(NoticeEvent)]


def run_turns(
    fake: FakeServer,
    tmp_path: Path,
    ws: Path,
    turns: int,
    *,
    provider: str,
    model: str = "fake",
    files: int = 40,
    **changes: Any,
) -> Run:
    """`turns` user turns through a real ChatSession on `fake`, then `/context`."""
    fake.responder = reader(files)
    agent: AgentConfig = default_agent().with_changes(
        name="auditor", provider=provider, base_url=fake.url, model=model, **changes
    )
    run = Run()

    async def go() -> None:
        session = ChatSession(
            agent, BrimPaths.resolve(tmp_path / "home"), run.events.append, workspace=ws
        )
        await session.start()
        for turn in range(turns):
            await session.send(f"Turn {turn}: read the next file and tell me if it is fine.")
        run.context_lines = session.context_report().lines()
        await session.close()

    asyncio.run(go())
    for request in fake.chat_requests:
        (run.summaries if is_summary_request(request.body) else run.requests).append(request)
    return run
