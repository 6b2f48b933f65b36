"""A long headless-style run on a small window: the ladder keeps every request inside it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.context.guided import is_compaction_request
from engine.events import CompactionEvent, ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, Reply

WINDOW = 4096
SUMMARY = """## Goal
Audit the files one by one.
## Constraints & Preferences
None stated.
## Covered So Far
- file{n}.txt
## Progress
### Done
- read files
### In Progress
- reading
### Blocked
- nothing
## Key Decisions
- file{n}.txt is fine
## Next Steps
- keep reading
## Critical Context
- none
"""


def _is_summary_request(body: dict[str, Any]) -> bool:
    """A compaction's request, in either form (the agent's model replays the conversation)."""
    messages = body["messages"]
    first = str(messages[0].get("content", "")) if messages[0].get("role") == "system" else ""
    return is_compaction_request(first, str(messages[-1].get("content", "")))


def _workspace(tmp_path: Path, files: int) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(files):
        words = " ".join(f"line{i}-{j} value" for j in range(260))
        (ws / f"file{i}.txt").write_text(words, encoding="utf-8")
    return ws


def _responder(counter: dict[str, int]):
    """A model that reads one file for each turn the user sends, then answers. What follows
    the file in the request (a compaction's note, a fill-level nudge) does not make it read
    another: keyed on the last message's role, it read again after every such note, and
    once each step compacted (every step does near a full window) the turn never ended."""

    def respond(request: Any) -> Reply:
        body = request.body
        if _is_summary_request(body):
            counter["summaries"] += 1
            return Reply(text=SUMMARY.replace("{n}", str(counter["summaries"])))
        if counter["read_in"] == counter["turn"]:
            return Reply(text="Noted; that file is fine.")
        counter["read_in"] = counter["turn"]
        counter["reads"] += 1
        return Reply(
            text="",
            tool_calls=[FakeToolCall("read_file", {"path": f"file{counter['reads'] % 40}.txt"})],
        )

    return respond


def test_forty_turns_of_large_tool_results_never_exceed_the_window(tmp_path: Path):
    events: list[Event] = []
    counter = {"summaries": 0, "reads": 0, "turn": 0, "read_in": -1}
    ws = _workspace(tmp_path, 40)
    with FakeLlamaServer(n_ctx=WINDOW, slots=1, n_ctx_train=8192) as fake:
        fake.responder = _responder(counter)
        agent = default_agent().with_changes(
            name="auditor", provider="llamacpp", base_url=fake.url, model="fake"
        )

        async def run() -> None:
            session = ChatSession(
                agent, BrimPaths.resolve(tmp_path / "home"), events.append, workspace=ws
            )
            await session.start()
            for turn in range(42):
                counter["turn"] = turn
                await session.send(f"Turn {turn}: read the next file and tell me if it is fine.")
            await session.close()

        asyncio.run(run())
        requests = list(fake.chat_requests)
    chats = [r for r in requests if not _is_summary_request(r.body)]
    summaries = [i for i, r in enumerate(requests) if _is_summary_request(r.body)]

    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert len(chats) >= 84
    assert max(r.prompt_tokens for r in chats) <= WINDOW
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 2
    # The second compaction merged the first checkpoint, not dropped it: the first request
    # after it shows the model what only the first summary decided, and the second's too.
    after_second = next(r for r in requests[summaries[1] + 1 :] if not _is_summary_request(r.body))
    shown = json.dumps(after_second.body["messages"])
    assert "file1.txt is fine" in shown and "file2.txt is fine" in shown
    # The stable prefix is byte-identical in every request the agent made: the system prompt
    # leads the one system message (a checkpoint joins it after the prompt's own text).
    prompt = chats[0].body["messages"][0]["content"]
    assert all(r.body["messages"][0]["role"] == "system" for r in chats)
    assert all(r.body["messages"][0]["content"].startswith(prompt) for r in chats)
    assert sum(1 for m in chats[-1].body["messages"] if m["role"] == "system") == 1
    tools = {json.dumps(r.body.get("tools")) for r in chats}
    assert len(tools) == 1
