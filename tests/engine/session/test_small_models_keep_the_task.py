"""Small models keep the task (issue 17), end to end through a real session on the fake
llama-server: the checkpoint reaches the model as plain second-person context, and the
user's own statements survive every compaction whatever the summarizer writes.

The summarizer doubles here write what a 135M model wrote on the real engine: markdown
skeletons full of "(none)", the summary voice ("The user is asking about …"), a loop in
another language, a fence delimiter of the prompt. A double that always writes a perfect
checkpoint hid exactly the failure users met.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.context.summarizer import REPLAY_QUESTION_MARK
from engine.events import CompactionEvent, ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

# What the summarizer answered on the real engine, or close to it.
SKELETON = (
    "## Goal\n- The user is asking about a trip.\n## Constraints & Preferences\n- (none)\n"
    "## Covered So Far\n- (none)\n## Progress\n### Done\n- (none)\n### In Progress\n- (none)\n"
    "### Blocked\n- (none)\n## Key Decisions\n- (none)\n## Next Steps\n- (none)\n"
    "## Critical Context\n- [The user is asking about the trip, and the answer is: 36]\n"
)
LOOP = "Bimbaisiliega: Não deve mós, não deve mós, não deve mós, não deve mós, não deve mós"
LEAK = "<<<END TRANSCRIPT ccf25d47>>"

FACTS = (
    "I am planning a trip to Lisbon with my sister in May.",
    "My budget for the whole trip is 1200 euros.",
    "I am allergic to peanuts.",
    "My sister is vegetarian.",
    "We prefer trains to buses.",
    "Our hotel is the Hotel Avenida near Rossio.",
)
QUESTIONS = (
    "Which city am I planning to visit, and with whom?",
    "What is my budget for the trip?",
    "What am I allergic to?",
    "What does my sister not eat?",
    "How do we like to travel?",
    "Which hotel are we staying at?",
)


def _filler(i: int) -> str:
    return (
        f"Question {i}: what is a good thing to see on day {i}? "
        + "Tell me more about it, please. " * 40
    )


def _chat(fake: Any, home: Path, turns: list[str]) -> list[Event]:
    events: list[Event] = []
    config = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake"
    )

    async def go() -> None:
        session = ChatSession(config, BrimPaths.resolve(home), events.append)
        await session.start()
        for text in turns:
            await session.send(text)
        await session.close()

    asyncio.run(go())
    return events


def _bad_summarizer(answers: list[str]) -> Any:
    """Free-form: the skeleton, then the loop, then the leak, in turn; every guided question
    gets the loop or the leak. Chat requests get a short answer."""
    count = {"freeform": 0, "guided": 0}

    def respond(request: Any) -> Reply:
        if not is_compaction(request.body):
            return Reply(text="Sure.")
        last = str(request.body["messages"][-1].get("content", ""))
        if REPLAY_QUESTION_MARK in last:
            count["guided"] += 1
            text = LOOP if count["guided"] % 2 else f"Lisbon, May. {LEAK}"
        else:
            text = (SKELETON, LOOP, f"{SKELETON}\n{LEAK}")[count["freeform"] % 3]
            count["freeform"] += 1
        answers.append(text)
        return Reply(text=text)

    return respond


def _agent_requests(fake: Any) -> list[dict[str, Any]]:
    return [r.body for r in fake.chat_requests if not is_compaction(r.body)]


def _asking(bodies: list[dict[str, Any]], question: str) -> dict[str, Any]:
    return next(b for b in bodies if question in str(b["messages"][-1].get("content", "")))


def test_after_compactions_the_model_is_sent_no_heading_placeholder_or_summary_voice(
    tmp_path: Path,
):
    answers: list[str] = []
    turns = [*FACTS, *(_filler(i) for i in range(14)), *QUESTIONS]
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _bad_summarizer(answers)
        events = _chat(fake, tmp_path, turns)
        requests = [r.body for r in fake.chat_requests]
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 2 and answers
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    first = next(i for i, body in enumerate(requests) if is_compaction(body))
    after = [body for body in requests[first:] if not is_compaction(body)]
    assert len(after) >= len(QUESTIONS)
    for body in after:
        sent = "\n".join(str(m.get("content", "")) for m in body["messages"])
        assert not re.search(r"^\s*#", sent, re.MULTILINE), sent[:600]
        for artefact in ("(none)", "The user is asking", "left out to fit", "[Checkpoint", "<<<"):
            assert artefact not in sent, (artefact, sent[:600])
        assert "Não deve" not in sent and "Bimbaisiliega" not in sent
        # The context is addressed to the model. On llama-server, whose cache reuses the
        # kept messages where they now stand, it follows them as a user turn (the system
        # message keeps only the prompt).
        assert body["messages"][0]["role"] == "system"
        assert "exchanged messages" not in body["messages"][0]["content"]
        assert any(
            m["role"] == "user" and "Before the messages above, you and the user" in m["content"]
            for m in body["messages"]
        ), sent[:600]


def test_six_stated_facts_survive_three_compactions_by_a_summarizer_that_drops_them(
    tmp_path: Path,
):
    answers: list[str] = []
    turns = [*FACTS, *(_filler(i) for i in range(24)), *QUESTIONS]
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _bad_summarizer(answers)
        events = _chat(fake, tmp_path, turns)
        bodies = _agent_requests(fake)
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 3, f"only {len(finished)} compactions"
    # No summarizer answer carried a fact: what reaches the model is Brim's own carry.
    assert not any("1200" in a or "peanut" in a for a in answers)
    for question in QUESTIONS:
        sent = json.dumps(_asking(bodies, question)["messages"], ensure_ascii=False)
        missing = [fact for fact in FACTS if fact not in sent]
        assert not missing, (question, missing)
    # Every summarizer answer was refused or emptied: the rows say the checkpoint is the
    # mechanical part, as data.
    assert {e.summary for e in finished} <= {"freeform", "guided", "mechanical"}
    assert any(e.summary == "mechanical" for e in finished)


def test_a_corrected_fact_replaces_the_old_one_in_every_later_checkpoint(tmp_path: Path):
    turns = [
        *FACTS,
        *(_filler(i) for i in range(6)),
        "Actually my budget for the whole trip is 1500 euros.",
        *(_filler(i) for i in range(6, 20)),
        "What is my budget for the trip?",
    ]
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _bad_summarizer([])
        _chat(fake, tmp_path, turns)
        bodies = _agent_requests(fake)
    sent = json.dumps(_asking(bodies, "What is my budget")["messages"], ensure_ascii=False)
    assert "1500 euros" in sent and "1200 euros" not in sent
    assert FACTS[0] in sent
