"""When an MCP server runs and where its loaded tools go, with the SDK's own test server
(tests/helpers/mcp_servers.py) over stdio and the scripted engine double: a server starts
at its first use, not with the conversation; a later conversation searches the listing the
server gave last without starting it; a compaction puts the loaded tools into the tools
block; a model that misses `call_tool` gets them there at once, with a notice."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.events import (
    NOTICE_MCP_TOOLS_JOINED,
    CompactionEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
)
from engine.messages import ToolCall
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = (
    "## Goal\nEcho the user's words through the MCP server.\n"
    "## Constraints & Preferences\n- none\n## Covered So Far\n- echoed brim\n"
    "## Progress\n### Done\n- echoed brim\n### In Progress\n- (none)\n"
    "### Blocked\n- (none)\n## Key Decisions\n- none\n## Next Steps\n- echo again\n"
    "## Critical Context\n- the echo tool is ok__echo\n"
)

pytestmark = pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep")


def _server(marker: str) -> McpServer:
    return McpServer(
        "ok",
        command=(sys.executable, "-m", "tests.helpers.mcp_servers", "ok", marker),
        env=(("PYTHONPATH", str(ROOT)),),
    )


def _processes(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", f"mcp_servers ok {marker}"], capture_output=True)
    return out.stdout.decode().split()


def _session(tmp_path: Path, events: list[Event], server: McpServer, engine: InProcessEngine):
    agent = AgentConfig(name="t", provider="llamacpp", model="fake-model", mcp=(server,))
    home = BrimPaths.resolve(tmp_path / "home")
    (tmp_path / "work").mkdir(exist_ok=True)
    return ChatSession(agent, home, events.append, provider=engine, workspace=tmp_path / "work")


def _search(engine: InProcessEngine, query: str) -> None:
    engine.script(tool_calls=[ToolCall("s1", "search_tools", json.dumps({"query": query}))])


def _call_tool(engine: InProcessEngine, name: str, args: dict) -> None:
    payload = json.dumps({"name": name, "arguments": args})
    engine.script(tool_calls=[ToolCall("c1", "call_tool", payload)])


def _direct(engine: InProcessEngine, name: str, args: dict, call_id: str = "d1") -> None:
    engine.script(tool_calls=[ToolCall(call_id, name, json.dumps(args))])


def _results(request: Request) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


def _names(request: Request) -> list[str]:
    return [t["function"]["name"] for t in request.options.tools]


def _block(request: Request) -> str:
    return json.dumps(list(request.options.tools), ensure_ascii=False, sort_keys=True)


def test_a_conversation_whose_model_never_uses_tools_starts_no_server(tmp_path: Path):
    marker = f"lazy-{tmp_path.name}"
    seen: dict[str, object] = {}

    async def scenario() -> list[Request]:
        events: list[Event] = []
        engine = InProcessEngine(window=8192)
        session = _session(tmp_path, events, _server(marker), engine)
        await session.start()
        engine.script("Hello.")
        await session.send("Hi")
        engine.script("Fine, thanks.")
        await session.send("How are you?")
        seen["idle"] = _processes(marker)
        seen["idle_hub"] = session._mcp.running
        # The same conversation then uses a tool: the server starts and answers.
        _search(engine, "reversed")
        _call_tool(engine, "ok__echo", {"text": "brim"})
        engine.script("Done.")
        await session.send("Echo brim")
        seen["used"] = _processes(marker)
        seen["used_hub"] = session._mcp.running
        await session.close()
        seen["closed"] = _processes(marker)
        seen["errors"] = [e for e in events if isinstance(e, ErrorEvent)]
        return engine.answered

    requests = asyncio.run(scenario())
    assert seen["idle"] == [] and seen["idle_hub"] == ()
    assert seen["used"] and seen["used_hub"] == ("ok",)
    assert seen["closed"] == []
    assert seen["errors"] == []
    assert _results(requests[-1])[-1] == "mirb"


async def _learn_listing(tmp_path: Path, marker: str) -> None:
    """A first conversation: search_tools starts the server, whose listing is kept."""
    engine = InProcessEngine(window=4096)
    session = _session(tmp_path, [], _server(marker), engine)
    await session.start()
    _search(engine, "reversed")
    engine.script("Found it.")
    await session.send("Which tool reverses text?")
    await session.close()


def test_a_later_conversation_searches_the_kept_listing_and_starts_the_server_at_its_call(
    tmp_path: Path,
):
    marker = f"kept-{tmp_path.name}"
    seen: dict[str, object] = {}

    async def second() -> list[Request]:
        events: list[Event] = []
        engine = InProcessEngine(window=4096)  # the server's 148 tokens are over 2%: deferred
        session = _session(tmp_path, events, _server(marker), engine)
        await session.start()
        _search(engine, "reversed")
        engine.script("Found it again.")
        await session.send("Which tool reverses text?")
        seen["searched"] = _processes(marker)
        _call_tool(engine, "ok__echo", {"text": "abc"})
        engine.script("Done.")
        await session.send("Reverse abc")
        seen["called"] = _processes(marker)
        await session.close()
        seen["errors"] = [e for e in events if isinstance(e, ErrorEvent)]
        return engine.answered

    asyncio.run(_learn_listing(tmp_path, marker))
    kept = list((tmp_path / "home" / "cache" / "mcp").glob("ok-*.json"))
    assert len(kept) == 1
    requests = asyncio.run(second())
    assert seen["searched"] == []  # answered from the kept listing
    assert seen["called"]  # the call started it
    assert seen["errors"] == []
    search = _results(requests[1])[0]
    assert search.startswith("ok__echo: Say the text back, reversed.")
    assert '"name": "ok__echo"' in search
    assert _results(requests[-1])[-1] == "cba"


@pytest.mark.parametrize("wired_first", [False, True])
def test_a_cheap_server_goes_eager_from_its_kept_listing_and_starts_at_its_first_call(
    tmp_path: Path, wired_first: bool
):
    """`wired_first`: a /compact before the first turn wires the loop with the pair alone;
    the first turn wires it again, with the eager tools."""
    marker = f"eager-{tmp_path.name}"
    seen: dict[str, object] = {}

    async def second() -> list[Request]:
        engine = InProcessEngine(window=8192)  # 148 tokens are under 2% of 8,192: eager
        session = _session(tmp_path, [], _server(marker), engine)
        await session.start()
        if wired_first:
            await session.compact()  # nothing to compact yet; the loop is wired
        engine.script("Hello.")
        await session.send("Hi")
        seen["chatted"] = _processes(marker)
        _direct(engine, "ok__echo", {"text": "abc"})
        engine.script("Done.")
        await session.send("Reverse abc")
        seen["called"] = _processes(marker)
        await session.close()
        return engine.answered

    asyncio.run(_learn_listing(tmp_path, marker))
    requests = asyncio.run(second())
    assert seen["chatted"] == []
    assert seen["called"]
    assert {"ok__echo", "ok__store"} <= set(_names(requests[0]))  # from the kept listing
    assert _results(requests[-1])[-1] == "cba"


def _checkpoint_or(script: list[Answer]):
    def answer(request: Request) -> Answer:
        body = {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}
        if is_compaction(body):
            return Answer(CHECKPOINT)
        return script.pop(0) if script else Answer("Noted.")

    return answer


def test_after_a_compaction_the_loaded_tool_is_in_the_tools_block_and_is_called_directly(
    tmp_path: Path,
):
    marker = f"join-{tmp_path.name}"

    async def scenario() -> tuple[list[Request], list[Event]]:
        events: list[Event] = []
        engine = InProcessEngine(window=4096)
        engine.responder = _checkpoint_or([])
        session = _session(tmp_path, events, _server(marker), engine)
        await session.start()
        _search(engine, "reversed")
        _call_tool(engine, "ok__echo", {"text": "brim"})
        engine.script("Done.")
        await session.send("Echo brim")
        for i in range(6):  # history for the compaction to summarize
            engine.script(f"Noted {i}.")
            await session.send(f"Note {i}: " + "the plan is to echo words back " * 30)
        await session.compact()
        _direct(engine, "ok__echo", {"text": "abc"})
        engine.script("Done again.")
        await session.send("Echo abc")
        await session.close()
        return engine.answered, events

    requests, events = asyncio.run(scenario())
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert finished
    at = next(i for i, r in enumerate(requests) if is_compaction(_body(r)))
    before, compaction, after = requests[:at], requests[at], requests[at + 1 :]
    # Up to the compaction (its own request included) the tools block is the first one.
    for request in [*before, compaction]:
        assert _block(request) == _block(before[0])
        assert "ok__echo" not in _names(request)
    # After it the loaded tool is in the block, with the schema search_tools showed.
    search = _results(before[1])[0]
    shown = json.loads(search.split("Its schema:\n", 1)[1])
    for request in after:
        assert "ok__echo" in _names(request)
        assert {"type": "function", "function": shown} in request.options.tools
    assert _results(after[-1])[-1] == "cba"  # called by its own name
    assert not [e for e in events if isinstance(e, ErrorEvent)]


def _body(request: Request) -> dict:
    return {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}


def test_a_model_that_calls_a_loaded_tool_by_its_name_gets_it_in_the_tools_block_with_a_notice(
    tmp_path: Path,
):
    marker = f"fallback-{tmp_path.name}"

    async def scenario() -> tuple[list[Request], list[Event]]:
        events: list[Event] = []
        engine = InProcessEngine(window=8192)
        session = _session(tmp_path, events, _server(marker), engine)
        await session.start()
        _search(engine, "reversed")
        _direct(engine, "ok__echo", {"text": "abc"}, "d1")  # a miss: not in the block
        _direct(engine, "ok__echo", {"text": "abc"}, "d2")  # the second: it joins and runs
        engine.script("Done.")
        await session.send("Echo abc")
        engine.script("Still here.")
        await session.send("Thanks")
        await session.close()
        return engine.answered, events

    requests, events = asyncio.run(scenario())
    notices = [
        e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_MCP_TOOLS_JOINED
    ]
    assert len(notices) == 1
    assert notices[0].details == {"reason": "calls_missed", "misses": 2, "tools": 1}
    assert "evaluates the prompt again from the start" in notices[0].text
    first_miss = _results(requests[2])[-1]
    assert first_miss.startswith("Error: there is no tool named 'ok__echo'")
    assert _results(requests[3])[-1] == "cba"
    for request in requests[:3]:
        assert "ok__echo" not in _names(request)
    for request in requests[3:]:
        assert "ok__echo" in _names(request)
