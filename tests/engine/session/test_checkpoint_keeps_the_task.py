"""A checkpoint cannot lose the task (issue 11 item 4), end to end through a real session on
the fake engines: a summarizer that forgets is refused or merged, an unserved summarizer
model falls back once, and the summarize_context tool tells the model what really happened."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.context.guided import is_compaction_request
from engine.events import CompactionEvent, ErrorEvent, Event, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, FakeVllm, Reply

FIRST_CHECKPOINT = (
    "## Goal\nMigrate the billing service to Postgres 16.\n"
    "## Constraints & Preferences\n- never touch the production replica\n"
    "## Covered So Far\n- (none)\n## Progress\n### Done\n- dumped the schema\n"
    "### In Progress\n- (none)\n### Blocked\n- (none)\n"
    "## Key Decisions\n- keep the old column names\n## Next Steps\n- load the dump\n"
    "## Critical Context\n- (none)\n"
)
TASK_FACTS = (
    "Migrate the billing service to Postgres 16.",
    "never touch the production replica",
    "dumped the schema",
    "keep the old column names",
)


def _is_compaction(body: dict[str, Any]) -> bool:
    messages = body["messages"]
    first = str(messages[0].get("content", "")) if messages[0].get("role") == "system" else ""
    return is_compaction_request(first, str(messages[-1].get("content", "")))


def _chat(fake: Any, home: Path, turns: list[str], **agent: Any) -> list[Event]:
    events: list[Event] = []
    config = default_agent().with_changes(
        name="chat", provider=agent.pop("provider", "llamacpp"), base_url=fake.url, **agent
    )

    async def go() -> None:
        session = ChatSession(config, BrimPaths.resolve(home), events.append)
        await session.start()
        for text in turns:
            await session.send(text)
        await session.close()

    asyncio.run(go())
    return events


def _turns(n: int) -> list[str]:
    # What the checkpoint says is in the conversation it summarizes: a summary whose words
    # appear nowhere in it is refused as invented.
    task = (
        "We migrate the billing service to Postgres 16 and never touch the production "
        "replica; I dumped the schema, we keep the old column names, next we load the dump. "
    )
    return [f"Step {i}: " + task + "tables rows columns " * 30 for i in range(n)]


def test_a_summarizer_that_answers_noted_leaves_the_earlier_checkpoint_in_every_later_request(
    tmp_path: Path,
):
    """The first compaction writes a real checkpoint; every later summarizer answer is
    "Noted." (free-form and guided alike). The task stays in every request that follows."""
    answered: list[str] = []

    def respond(request: Any) -> Reply:
        if not _is_compaction(request.body):
            return Reply(text="Done.")
        text = FIRST_CHECKPOINT if not answered else "Noted."
        answered.append(text)
        return Reply(text=text)

    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = respond
        events = _chat(fake, tmp_path, _turns(24), model="fake")
        chats = [r for r in fake.chat_requests if not _is_compaction(r.body)]
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert finished, "the run never compacted"
    assert answered.count("Noted.") >= 1, "no later compaction asked the summarizer again"
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    first_with_checkpoint = next(
        i for i, r in enumerate(chats) if TASK_FACTS[0] in json.dumps(r.body["messages"])
    )
    later = chats[first_with_checkpoint:]
    assert len(later) > 3
    for request in later:
        sent = json.dumps(request.body["messages"])
        assert all(json.dumps(fact)[1:-1] in sent for fact in TASK_FACTS), sent[:400]
        assert "Noted." not in request.body["messages"][0]["content"]


def test_a_summarizer_model_the_engine_does_not_serve_falls_back_to_the_agents_with_one_warning(
    tmp_path: Path,
):
    def respond(request: Any) -> Reply:
        return Reply(text=FIRST_CHECKPOINT if _is_compaction(request.body) else "Done.")

    with FakeVllm(model="qwen-7b", max_model_len=2048) as fake:
        fake.responder = respond
        events = _chat(
            fake, tmp_path, _turns(20), provider="vllm", model="qwen-7b",
            summarizer_model="qwen-0.5b-missing",
        )  # fmt: skip
        asked = [r.body.get("model") for r in fake.chat_requests if _is_compaction(r.body)]
    warnings = [e for e in events if isinstance(e, NoticeEvent) and "qwen-0.5b-missing" in e.text]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    failed = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "failed"]
    assert len(finished) >= 2 and failed == []
    assert asked and set(asked) == {"qwen-7b"}


def test_the_summarize_context_tool_tells_the_model_what_the_compaction_did(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("alpha beta gamma\n" * 300, encoding="utf-8")
    with FakeLlamaServer(n_ctx=8192) as fake:
        # Nothing to compact yet: the model asks anyway.
        fake.script_reply(tool_calls=[FakeToolCall("summarize_context", {})])
        fake.script_reply("ok")
        for _ in range(3):
            fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "notes.md"})])
            fake.script_reply("read it")
        fake.script_reply(tool_calls=[FakeToolCall("summarize_context", {})])
        fake.script_reply("ok")
        fake.responder = lambda request: Reply(
            text=FIRST_CHECKPOINT if _is_compaction(request.body) else "ok"
        )
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )

        async def go() -> None:
            session = ChatSession(agent, BrimPaths.resolve(tmp_path / "h"), lambda e: None,
                                  workspace=ws)  # fmt: skip
            await session.start()
            for text in ("Compact please", "Read it", "Again", "Once more", "Now compact"):
                await session.send(text)
            await session.close()

        asyncio.run(go())
        results = [
            m["content"]
            for r in fake.chat_requests
            for m in r.body["messages"]
            if m.get("role") == "tool" and m.get("name") == "summarize_context"
        ]
    answers = list(dict.fromkeys(results))
    assert answers[0].startswith("Not compacted: nothing old enough to summarize")
    assert "Context compacted" not in answers[0]
    assert any(a.startswith("Compacted ") and " → " in a for a in answers[1:]), answers
