"""The window before the first prompt, and the reloads after it, through the real session
and agent loop against the Ollama double: an unpinned agent has Ollama load its model with
no messages and reads /api/ps before anything is sent; after every answer a reload (another
client, an expired keep-alive) is told once; Brim's own requests never reload the model."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import (
    NOTICE_MODEL_RELOADED,
    CompactionEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    TurnEndEvent,
    WindowEvent,
    WindowLearnedEvent,
)
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.tools.compact_schemas import compact_schemas
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeOllama, OllamaModel, Reply
from tests.helpers.fake_ollama import OUT_OF_MEMORY

MODEL = "qwen3:8b"
SUMMARY = (
    "## Goal\nTalk about the topics one by one.\n## Constraints & Preferences\n- none\n"
    "## Covered So Far\n- the earlier topics\n## Progress\n### Done\n- answered\n"
    "### In Progress\n- the current topic\n### Blocked\n- nothing\n## Key Decisions\n- none\n"
    "## Next Steps\n- keep going\n## Critical Context\n- none\n"
)
PROSE = (
    "the river carries silt past the old mill while herons wait in the shallows and the "
    "miller counts sacks of barley for the winter market"
)
WORDS = PROSE.split(" ")


def _prose(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


def _answers(request: Any) -> Reply:
    if is_compaction(request.body):
        return Reply(text=SUMMARY)
    return Reply(text=_prose(40, len(request.body["messages"])))


def _agent(fake: FakeOllama, **changes: Any) -> Any:
    return default_agent().with_changes(
        name="chat", provider="ollama", base_url=fake.url, model=MODEL, **changes
    )


def _run(
    agent: Any,
    home: Path,
    turns: list[str],
    *,
    between: dict[int, Callable[[], None]] | None = None,
    **session: Any,
) -> list[Event]:
    """The turns in one session; `between[i]` runs after turn i answered."""
    events: list[Event] = []

    async def go() -> None:
        chat = ChatSession(agent, BrimPaths.resolve(home / "home"), events.append, **session)
        await chat.start()
        try:
            for index, text in enumerate(turns):
                await chat.send(text)
                if between and index in between:
                    between[index]()
        finally:
            await chat.close()

    asyncio.run(go())
    return events


def _of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _reloads(events: list[Event]) -> list[NoticeEvent]:
    return [e for e in _of(events, NoticeEvent) if e.kind == NOTICE_MODEL_RELOADED]


def _workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    (folder / "notes.txt").write_text("a note\n", encoding="utf-8")
    return folder


def _is_full(tools: list[dict[str, Any]]) -> bool:
    """The tool schemas as sent carry their full descriptions (compacting would change them)."""
    return bool(tools) and compact_schemas(tools) != tools


def test_an_unpinned_ollama_agent_knows_the_window_before_its_first_request(tmp_path: Path):
    """Ollama would load it with 32K (its choice on a 24 GiB GPU); on the old 4,096 guess the
    first answer was capped at 1,024 tokens and the tools went out compact."""
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], default_num_ctx=32768) as fake:
        fake.responder = _answers
        events = _run(
            _agent(fake), tmp_path, ["hello", "and again"], workspace=_workspace(tmp_path)
        )
        posted = fake.requests_to("/api/chat")
        loads, chats = fake.load_requests, fake.chat_requests
        reloads = fake.reloads

    # Loaded with no messages before anything was sent, with the options every request has.
    assert len(loads) == 1 and posted[0] is loads[0]
    assert all(chats[0].at > loads[0].at for _ in chats)
    runner = {k: v for k, v in (loads[0].body.get("options") or {}).items() if k == "num_ctx"}
    assert runner == {}
    assert {(r.body.get("truncate"), r.body.get("shift")) for r in [*loads, *chats]} == {
        (False, False)
    }
    assert reloads == 0
    # The first window the user sees is the served one; nothing is learned afterwards.
    first = _of(events, WindowEvent)[0]
    assert (first.window, first.source) == (32768, "server")
    told = [w for e in _of(events, WindowEvent) for w in e.warnings]
    assert not [t for t in told if "unknown until the first answer" in t]
    assert _of(events, WindowLearnedEvent) == []
    # The first request is decided on the real window: its output cap and its tools.
    assert chats[0].body["options"]["num_predict"] == 4096
    assert _is_full(chats[0].body["tools"])
    assert _reloads(events) == []
    assert _of(events, ErrorEvent) == []


def test_an_agent_whose_start_load_fails_learns_the_window_after_its_first_answer(
    tmp_path: Path,
):
    with FakeOllama(
        [OllamaModel(MODEL, context_length=40960)],
        default_num_ctx=32768,
        refuse_loads=OUT_OF_MEMORY,
    ) as fake:
        fake.responder = _answers
        events = _run(_agent(fake), tmp_path, ["hello", "and again"])
    assert (_of(events, WindowEvent)[0].window, _of(events, WindowEvent)[0].source) == (
        4096,
        "assumed",
    )
    learned = _of(events, WindowLearnedEvent)
    assert [(e.old, e.new, e.cause, e.compacts_at) for e in learned] == [
        (4096, 32768, "loaded", 26214)
    ]
    assert _reloads(events) == []  # the first load is no reload
    assert _of(events, ErrorEvent) == []


def test_a_reload_by_another_client_with_another_window_is_named_once_and_redecides_the_window(
    tmp_path: Path,
):
    """Another program (one that also turns the context shift off) had Ollama load the model
    again, and this time Ollama chose 4,096 (less memory free): Brim's requests, naming no
    num_ctx, run on it from then on. (A client that leaves shift on reloads it for Brim's
    next request instead, from 0.30 on: shift is then a launch setting.)"""
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], default_num_ctx=32768) as fake:
        fake.responder = _answers

        def another_client_reloads() -> None:
            fake.unload(MODEL)
            fake.default_num_ctx = 4096
            fake.another_client(MODEL, shift=False)

        turns = ["hello", "and again", "a third time", "and a fourth"]
        events = _run(
            _agent(fake),
            tmp_path,
            turns,
            between={1: another_client_reloads},
            workspace=_workspace(tmp_path),
        )
        chats = fake.chat_requests
        brims = [r for r in fake.loads if r != (MODEL, 4096)]

    (reload,) = _reloads(events)
    assert reload.text == (
        f"{MODEL} was reloaded with a 4,096 window by another client; Brim now compacts at 3,276."
    )
    assert reload.details == {
        "cause": "another_client",
        "model": MODEL,
        "window": 4096,
        "old": 32768,
        "load_ms": 0,
        "compacts_at": 3276,
    }
    assert (_of(events, WindowEvent)[-1].window, _of(events, WindowEvent)[-1].source) == (
        4096,
        "server",
    )
    # Decided again on the window learned (the answer after the reload tells it): the
    # output cap and the tool descriptions.
    assert [r.body["options"]["num_predict"] for r in chats] == [4096, 4096, 4096, 1024]
    assert [_is_full(r.body["tools"]) for r in chats] == [True, True, True, False]
    assert brims == [(MODEL, 32768)]  # Brim's own requests loaded it once, at the start


def test_a_reload_another_clients_num_ctx_caused_is_named_once_for_a_pinned_agent(
    tmp_path: Path,
):
    with FakeOllama([OllamaModel(MODEL, context_length=40960)]) as fake:
        fake.responder = _answers
        turns = ["hello", "and again", "a third time", "and a fourth"]
        events = _run(
            _agent(fake, num_ctx=8192),
            tmp_path,
            turns,
            between={1: lambda: fake.another_client(MODEL, 2048)},
        )
        loads = list(fake.loads)
    assert loads == [(MODEL, 8192), (MODEL, 2048), (MODEL, 8192)]
    (reload,) = _reloads(events)
    assert reload.details["cause"] == "another_client"
    assert (reload.details["window"], reload.details["old"]) == (8192, 8192)
    assert reload.details["load_ms"] == 1250
    assert "another client" in reload.text and "num_ctx" in reload.text
    assert _of(events, WindowLearnedEvent) == []  # the pin stands: nothing to learn


def test_a_reload_after_the_keep_alive_ran_out_is_named_as_such(tmp_path: Path):
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], keep_alive_s=0.4) as fake:
        fake.responder = _answers
        events = _run(
            _agent(fake, num_ctx=8192),
            tmp_path,
            ["hello", "and again", "a third time"],
            between={1: lambda: time.sleep(0.6)},
        )
    (reload,) = _reloads(events)
    assert reload.details["cause"] == "expired"
    assert reload.text.startswith(f"Ollama had unloaded {MODEL} when its keep-alive ran out")


def test_brims_own_requests_never_reload_the_model_in_a_run_with_memory_and_compaction(
    tmp_path: Path,
):
    """The load at the start, the agent's requests, the summarizer's and memory's all carry
    the same runner options and no keep_alive: the model is loaded once, never again."""
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], default_num_ctx=4096) as fake:
        fake.responder = _answers
        turns = [f"I prefer tabs. Topic {i}: " + _prose(110, i) for i in range(14)]
        events = _run(
            _agent(fake),
            tmp_path,
            turns,
            workspace=_workspace(tmp_path),
            memory=True,
            reflect_on_close=True,
        )
        posted = fake.requests_to("/api/chat")
        loads, reloads = list(fake.loads), fake.reloads

    assert [e for e in _of(events, CompactionEvent) if e.phase == "finished"], "must compact"
    assert len(_of(events, TurnEndEvent)) == len(turns)
    assert any(is_compaction(r.body) for r in posted)
    assert (loads, reloads) == ([(MODEL, 4096)], 0)
    options = {
        (
            (r.body.get("options") or {}).get("num_ctx"),
            r.body.get("truncate"),
            r.body.get("shift"),
            "keep_alive" in r.body,
        )
        for r in posted
    }
    assert options == {(None, False, False, False)}
    assert _reloads(events) == []
