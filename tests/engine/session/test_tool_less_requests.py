"""What Brim writes into a tool-less agent's requests names no tool and asks for no action the
model cannot take; the user's statements stay in the request (issue 41).

Through the real session on the in-process engine. The tool names are not listed here:
they are collected from what a tooled session of the same agent is sent (its registry, the
memory tools, and MCP's always-on pair), so a tool added later is checked too. Everything
in a request but the person's own words and the model's own answers is Brim's: the system
prompt and its memory section, the checkpoint's face, the journal preamble, the
continuation note, the nudges.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from engine.config import AgentConfig
from engine.context import Journal
from engine.context.constants import RETRIEVE_TOOL
from engine.context.work_state import PREAMBLE_HEAD
from engine.events import CompactionEvent, ErrorEvent, Event, NoticeEvent
from engine.mcp.deferred import CALL_NAME, SEARCH_NAME
from engine.memory import MemoryService
from engine.messages import Message
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.tools import AutoApprove
from tests.helpers.fake_provider import Answer, InProcessEngine, Request
from tests.helpers.scripted_session import is_summary_request

WINDOW = 4096
AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")
# Fifteen first-person statements, each the length a person writes them (25-31 tokens).
FACTS = (
    "I live in a narrow terraced house in Leeds with a garden of about forty square metres "
    "behind it, facing south-west towards the allotments.",
    "My partner Sam is allergic to bee stings, so we avoid planting lavender or borage anywhere "
    "near the back door or the kitchen window.",
    "We have three raised beds made of old scaffolding boards, each about two metres long and "
    "eighty centimetres wide, lined with cardboard.",
    "I always water the beds at six in the morning before I leave for my shift at the hospital "
    "across town on the number six bus.",
    "My budget for seeds, compost and netting this year is one hundred and twenty pounds in "
    "total, and I will not spend more than that.",
    "Our soil is heavy clay that stays wet and cold until late April in most years, even under "
    "the horticultural fleece we bought.",
    "I prefer heritage tomato varieties such as Gardener's Delight and Black Krim over any of "
    "the modern hybrids sold at the garden centre.",
    "We never use slug pellets because the neighbour's old grey cat sleeps in the strawberry "
    "patch every single sunny afternoon in summer.",
    "My daughter Ellie plants the sunflowers every May and measures them with a tape every "
    "Sunday after lunch and writes it in a notebook.",
    "I work night shifts every second week, so the garden gets no care at all on those "
    "weekdays except for a quick watering.",
    "We always compost the kitchen scraps in two black bins near the shed at the bottom of the "
    "garden and turn them monthly.",
    "I am planning to add a small polycarbonate greenhouse next spring if the budget allows it "
    "by then, probably in March.",
    "Our water butt holds two hundred litres and usually runs completely dry by the middle of "
    "July when the weather is hot and dry.",
    "My mother gave us a rhubarb crown in 2019 that still grows well in the shady corner by the "
    "fence next to the old apple tree.",
    "We only grow vegetables we actually eat, mostly runner beans, courgettes, tomatoes and "
    "early potatoes, and a few leeks for winter.",
)
CHECKPOINT = (
    "## Goal\n- Plan this year's vegetable garden.\n## Progress\n### Done\n- talked through the "
    "beds and the soil\n### In Progress\n- choosing what to sow first\n## Next Steps\n- pick "
    "the seeds\n## Critical Context\n- the soil is slow to warm\n"
)


def _answer(request: Request) -> Answer:
    if is_summary_request(request):
        return Answer(CHECKPOINT)
    return Answer("Noted.")


def _filler(i: int) -> str:
    return f"Question {i}: what would you sow in a clay bed in week {i}? " + "Say more. " * 60


def _names(tools: list[dict[str, Any]]) -> set[str]:
    return {str(t.get("function", t).get("name")) for t in tools}


def _every_tool_name(tmp_path: Path) -> set[str]:
    """What a tooled session of the agent is offered (workspace tools, memory tools), and
    MCP's always-on pair: every tool a Brim request could name."""
    engine = InProcessEngine(window=32_768)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def go() -> None:
        session = ChatSession(
            AGENT, BrimPaths.resolve(tmp_path / "tooled"), lambda _e: None, provider=engine,
            workspace=workspace, approver=AutoApprove(), memory=True,
        )  # fmt: skip
        await session.start()
        await session.send("Hello.")
        await session.close()

    asyncio.run(go())
    names = set().union(*(_names(r.options.tools) for r in engine.requests))
    assert {RETRIEVE_TOOL, "read_file", "view_memory"} <= names  # the collection works
    return names | {SEARCH_NAME, CALL_NAME}


def _remember(home: BrimPaths, count: int) -> None:
    """Memory entries, more than the standing line has room for."""
    folder = MemoryService.for_paths(home).layout.global_scope().folder
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"plot-{i}.md").write_text(
            f"The user keeps allotment plot number {i} beside the railway line and visits "
            "it on Saturday mornings.\n",
            encoding="utf-8",
        )


def _brims_words(request: Request, theirs: list[str]) -> str:
    """The request's text less the person's own words and the model's answers."""
    text = "\n".join(m.content for m in request.messages)
    for words in sorted(theirs, key=len, reverse=True):
        text = text.replace(words, " ")
    return text


def _chat(home: BrimPaths, engine: InProcessEngine, events: list[Event], **kw: Any) -> str:
    async def go() -> str:
        session = ChatSession(AGENT, home, events.append, provider=engine, **kw)
        await session.start()
        for fact in FACTS:
            await session.send(fact)
        for i in range(40):
            await session.send(_filler(i))
            if any(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events):
                break
        await session.send("Which bed should get the tomatoes?")
        await session.close()
        return session.conversation_id

    return asyncio.run(go())


def _agent_requests(engine: InProcessEngine) -> list[Request]:
    return [r for r in engine.requests if not is_summary_request(r)]


def test_no_brim_written_part_of_a_tool_less_request_names_a_tool_it_does_not_carry(
    tmp_path: Path,
):
    every_tool = _every_tool_name(tmp_path)
    home = BrimPaths.resolve(tmp_path / "home")
    _remember(home, 40)
    engine = InProcessEngine(window=WINDOW)
    engine.responder = _answer
    events: list[Event] = []
    conversation = _chat(home, engine, events, memory=True)
    # A record the live checkpoint does not carry (a cap left it out), so the reopened
    # conversation gets a journal preamble; and a paste no window could hold.
    journal = Journal(home.conversation_dir(AGENT.name, conversation) / "journal.jsonl")
    journal.append({"summary": "## Done\n- measured the beds and tested the soil's pH\n"})

    async def reopen() -> None:
        session = ChatSession(AGENT, home, events.append, provider=engine,
                              conversation_id=conversation, memory=True)  # fmt: skip
        await session.start()
        await session.send("paste " * 6_000)
        await session.send("And where do the beans go?")
        await session.close()

    asyncio.run(reopen())
    theirs = [
        *FACTS, *(_filler(i) for i in range(40)), "Which bed should get the tomatoes?",
        "And where do the beans go?", "Noted.",
    ]  # fmt: skip
    requests = _agent_requests(engine)
    assert any(PREAMBLE_HEAD in m.content for m in requests[-1].messages)  # all parts sent
    assert any("more entries" in m.content for m in requests[0].messages)
    assert any(m.kind == "summary" or "you and the user" in m.content
               for m in requests[-1].messages)  # fmt: skip
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(every_tool))) + r")\b")
    theirs.append(CHECKPOINT)
    for request in engine.requests:  # the summarizer's too
        carried = _names(request.options.tools)
        named = set(pattern.findall(_brims_words(request, theirs))) - carried
        assert named == set(), named
        brims = _brims_words(request, theirs)
        assert "read the files" not in brims and "file to read" not in brims
    (refusal,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert refusal.kind == "message_too_large"  # words for the user, no tools in them either
    assert "tool" not in refusal.message and "file" not in refusal.message
    told = [e.text for e in events if isinstance(e, NoticeEvent)]
    assert told and not [t for t in told if "tool" in t.lower() or pattern.search(t)]


def _summary(request: Request) -> Message:
    (summary,) = [m for m in request.messages if "exchanged messages no longer" in m.content]
    return summary


def test_every_fact_a_tool_less_agent_was_told_is_in_the_request_after_compaction(
    tmp_path: Path,
):
    home = BrimPaths.resolve(tmp_path / "home")
    engine = InProcessEngine(window=WINDOW)
    engine.responder = _answer
    events: list[Event] = []
    _chat(home, engine, events)
    last = _agent_requests(engine)[-1]
    face = _summary(last).content
    # Every fact came through the checkpoint (none of their messages is kept) ...
    assert not [m for m in last.messages if m.content in FACTS]
    missing = [fact for fact in FACTS if fact not in face]
    assert missing == []
    assert RETRIEVE_TOOL not in face and last.options.tools == []
    # ... and the checkpoint still frees the window it was made for.
    assert last.prompt_tokens < 0.7 * WINDOW


def test_an_agent_with_tools_still_gets_its_pointer_to_the_older_statements(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    engine = InProcessEngine(window=WINDOW)
    engine.responder = _answer
    events: list[Event] = []
    _chat(home, engine, events, workspace=workspace, approver=AutoApprove())
    last = _agent_requests(engine)[-1]
    face = _summary(last).content
    assert RETRIEVE_TOOL in face and RETRIEVE_TOOL in _names(last.options.tools)
    assert [fact for fact in FACTS if fact not in face]  # the oldest went to the stored file


def test_where_even_the_whole_checkpoint_is_too_small_nothing_points_at_a_stored_file(
    tmp_path: Path,
):
    """On a 2K window the checkpoint holds about 300 tokens: fewer than the fifteen facts.
    The newest stay; the oldest are stored but not pointed at (the model could not read
    them), so the request says nothing it cannot back."""
    home = BrimPaths.resolve(tmp_path / "home")
    engine = InProcessEngine(window=2048)
    engine.responder = _answer
    _chat(home, engine, [])
    faces = [_summary(r).content for r in _agent_requests(engine) if _has_summary(r)]
    assert faces
    for face in faces:
        assert RETRIEVE_TOOL not in face and "stored" not in face
    assert FACTS[-1] in faces[-1] and FACTS[0] not in faces[-1]


def _has_summary(request: Request) -> bool:
    return any("exchanged messages no longer" in m.content for m in request.messages)
