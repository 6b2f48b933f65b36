"""A window drawn from one overflow error is checked before it rules the session, through
the real session and loop against the llama-server double (its /props says 8,192 per slot):
an error naming `n_ctx: 300`, one naming a 2,000-token prompt beside a window of a trillion,
and a rejection below the report that a later, larger answered request contradicts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import (
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
    WindowEvent,
    WindowLearnedEvent,
)
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, RecordedRequest, Reply

WINDOW = 8192
SUMMARY = (
    "## Goal\nTalk about the topics.\n## Constraints & Preferences\n- none\n"
    "## Covered So Far\n- the topics\n## Progress\n### Done\n- answered\n"
    "### In Progress\n- the current topic\n### Blocked\n- nothing\n## Key Decisions\n- none\n"
    "## Next Steps\n- keep going\n## Critical Context\n- none\n"
)
PROSE = (
    "the river carries silt past the old mill while herons wait in the shallows and the "
    "miller counts sacks of barley for the winter market"
)
WORDS = PROSE.split()
# What the notices' kinds are called (engine/events.py), spelled out so this file also runs
# against code that does not have them.
DOUBTED = "window_not_believed"
DROPPED = "window_dropped"


def _prose(words: int, seed: int = 0) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(words))


class NamingLlamaServer(FakeLlamaServer):
    """llama-server whose next overflow error names the figures a test gives it."""

    named: tuple[int | None, int] | None = None  # (n_prompt_tokens or the real, n_ctx)

    def overflow_body(self, prompt: int, max_tokens: int | None, window: int) -> dict[str, Any]:
        if self.named is not None:
            named_prompt, named_ctx = self.named
            self.named = None
            return super().overflow_body(named_prompt or prompt, max_tokens, named_ctx)
        return super().overflow_body(prompt, max_tokens, window)


def _answers(reject: set[str]):
    """Answer every line; reject once, with an overflow, the first request of each line
    whose text starts with one of `reject`."""
    seen: set[str] = set()

    def respond(request: RecordedRequest) -> Reply:
        if is_compaction(request.body):
            return Reply(text=SUMMARY)
        last = str(request.body["messages"][-1].get("content") or "")
        for mark in reject:
            if mark in last and mark not in seen:
                seen.add(mark)
                return Reply(fail="overflow")
        return Reply(text=_prose(20, len(request.body["messages"])))

    return respond


def _run(fake: FakeLlamaServer, home: Path, lines: list[str]) -> list[Event]:
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake"
    )

    workspace = home / "ws"
    workspace.mkdir(parents=True, exist_ok=True)

    async def go() -> None:
        # With a workspace the agent has its tools: the fixed prefix is ~1,700 tokens.
        chat = ChatSession(agent, BrimPaths.resolve(home), events.append, workspace=workspace)
        await chat.start()
        try:
            for line in lines:
                await chat.send(line)
        finally:
            await chat.close()

    asyncio.run(go())
    return events


def _of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _notices(events: list[Event], kind: str) -> list[NoticeEvent]:
    return [e for e in _of(events, NoticeEvent) if e.kind == kind]


def _turns_after(events: list[Event], first: int) -> list[Event]:
    """The events after the first `first` turns ended (by error or turn_end)."""
    ended = 0
    for i, event in enumerate(events):
        if isinstance(event, (TurnEndEvent, ErrorEvent)):
            ended += 1
            if ended == first:
                return events[i + 1 :]
    return []


def test_an_overflow_naming_300_while_props_says_8192_leaves_the_next_6_lines_answered(
    tmp_path: Path,
):
    with NamingLlamaServer(n_ctx=WINDOW, slots=1, n_ctx_train=32768) as fake:
        fake.named = (None, 300)
        fake.responder = _answers({"Line 0"})
        lines = [f"Line {i}: " + _prose(30, i) for i in range(7)]
        events = _run(fake, tmp_path, lines)
        answered = [r for r in fake.chat_requests[1:] if not r.rejected]

    assert [e.new for e in _of(events, WindowLearnedEvent)] == []
    later = _turns_after(events, 1)
    assert _of(later, ErrorEvent) == []
    assert len(_of(later, TurnEndEvent)) == 6  # every one of the next 6 lines answered
    assert len(answered) >= 6
    doubted = _notices(events, DOUBTED)
    assert len(doubted) == 1
    assert doubted[0].details["window"] == 300
    assert doubted[0].details["source"] == "overflow_error"
    assert doubted[0].details["reason"] == "below_fixed_prefix"
    assert doubted[0].details["kept"] == WINDOW
    assert _of(events, WindowEvent)[-1].window == WINDOW


def test_an_overflow_naming_a_2000_prompt_and_a_huge_window_is_not_learned_as_2000(
    tmp_path: Path,
):
    with NamingLlamaServer(n_ctx=WINDOW, slots=1, n_ctx_train=32768) as fake:
        fake.named = (2000, 10**12)
        fake.responder = _answers({"Line 0"})
        lines = [f"Line {i}: " + _prose(30, i) for i in range(4)]
        events = _run(fake, tmp_path, lines)

    assert [e.new for e in _of(events, WindowLearnedEvent)] == []
    doubted = _notices(events, DOUBTED)
    assert [(d.details["window"], d.details["source"]) for d in doubted] == [
        (2000, "overflow_error")
    ]
    later = _turns_after(events, 1)
    assert _of(later, ErrorEvent) == []
    assert len(_of(later, TurnEndEvent)) == 3
    assert _of(events, WindowEvent)[-1].window == WINDOW


def test_a_window_learned_from_a_rejection_is_dropped_when_a_larger_request_is_answered(
    tmp_path: Path,
):
    """A rejection below what /props reports is believed (slots sharing one KV pool run out
    below it), but only until the engine answers a request larger than it."""
    with NamingLlamaServer(n_ctx=WINDOW, slots=1, n_ctx_train=32768) as fake:
        fake.named = (None, WINDOW)  # the slot's n_ctx, as the server's own check names it
        fake.responder = _answers({"Line 1"})
        lines = [
            "Line 0: hello there.",
            "Line 1: " + _prose(900, 1),
            "Line 2: " + _prose(2400, 2),  # more than the rejection's size, less than 8,192
        ]
        events = _run(fake, tmp_path, lines)
        rejected = [r.prompt_tokens for r in fake.rejections]
        served = [r.prompt_tokens or 0 for r in fake.chat_requests if not r.rejected]

    learned = _of(events, WindowLearnedEvent)
    assert [(e.cause, e.source) for e in learned] == [("rejected_below_report", "observed")]
    assert learned[0].new == rejected[0]
    assert _of(events, ErrorEvent) == []
    assert len(_of(events, TurnEndEvent)) == 3
    assert max(served) > learned[0].new  # the engine answered more than the lesson allowed
    dropped = _notices(events, DROPPED)
    assert len(dropped) == 1
    assert dropped[0].details["window"] == learned[0].new
    assert dropped[0].details["restored"] == WINDOW
    assert dropped[0].details["answered"] > learned[0].new
    assert (_of(events, WindowEvent)[-1].window, _of(events, WindowEvent)[-1].source) == (
        WINDOW,
        "server",
    )
    learned_notices = _notices(events, "window_learned")
    assert [(n.details["window"], n.details["source"]) for n in learned_notices] == [
        (learned[0].new, "observed")
    ]
