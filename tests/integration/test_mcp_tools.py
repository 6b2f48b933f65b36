"""MCP tools on a local window, with the registry's real servers (mcp-server-time and
mcp-server-git over stdio) and a streamable-HTTP server written with the SDK: the scripted
model finds a tool with search_tools, calls it with call_tool and reads the real result;
loading a tool changes no byte of the request before it."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.config import AgentConfig
from engine.config.mcp_servers import McpServer
from engine.events import ErrorEvent, Event, TurnEndEvent
from engine.messages import ToolCall, to_openai
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_provider import InProcessEngine, Request
from tests.helpers.fake_tokenizer import render_chat

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
TIME = McpServer("time", command=(str(BIN / "mcp-server-time"), "--local-timezone", "UTC"))
BUILTIN_AND_PAIR = 11  # the nine built-in tools, search_tools and call_tool

pytestmark = pytest.mark.skipif(
    not (BIN / "mcp-server-time").exists(), reason="the registry's MCP servers are not installed"
)


def _session(tmp_path: Path, events: list[Event], *servers: McpServer, window: int = 8192):
    engine = InProcessEngine(window=window)
    agent = AgentConfig(name="t", provider="llamacpp", model="fake-model", mcp=servers)
    home = BrimPaths.resolve(tmp_path / "home")
    (tmp_path / "work").mkdir(exist_ok=True)
    session = ChatSession(agent, home, events.append, provider=engine, workspace=tmp_path / "work")
    return engine, session


def _wire(request: Request) -> str:
    """The request as the engine's template renders it (without the generation prompt)."""
    messages = [to_openai(m) for m in request.messages]
    return render_chat(messages, list(request.options.tools), add_generation_prompt=False)


def _tool_names(request: Request) -> list[str]:
    return [t["function"]["name"] for t in request.options.tools]


def _search_then_call(engine: InProcessEngine, query: str, name: str, args: dict) -> None:
    engine.script(tool_calls=[ToolCall("c1", "search_tools", json.dumps({"query": query}))])
    engine.script(
        tool_calls=[ToolCall("c2", "call_tool", json.dumps({"name": name, "arguments": args}))]
    )
    engine.script("Here it is.")


def _tool_results(request: Request) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


def test_the_model_finds_the_time_tool_calls_it_and_reads_the_real_time(tmp_path: Path):
    async def scenario() -> list[Request]:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, TIME)
        await session.start()
        _search_then_call(engine, "current time", "time__get_current_time", {"timezone": "UTC"})
        await session.send("What time is it?")
        engine.script("Still here.")
        await session.send("Thanks")
        lines = session.context_report().lines()
        await session.close()
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        mcp = [line for line in lines if line.lstrip().startswith(("MCP", "time", "loaded"))]
        assert mcp[0].startswith("MCP: always-on tool schemas") and "(11 tools)" in mcp[0]
        assert mcp[1].startswith("  time: deferred, 2 tools,")
        assert mcp[2].startswith("  loaded: time__get_current_time (")
        saved = int(mcp[0].split("saves ")[1].split(" ")[0].replace(",", ""))
        assert saved > 100
        return engine.answered

    first, second, third, fourth = asyncio.run(scenario())
    search, called = _tool_results(third)
    assert "time__get_current_time: Get current time" in search
    assert '"name": "time__get_current_time"' in search  # the loaded schema, in the result
    assert json.loads(called)["timezone"] == "UTC"
    assert json.loads(called)["datetime"].startswith(time.strftime("%Y-%m-%d", time.gmtime()))
    # The tools block is the same always-on set in every request: no MCP schema in it.
    for request in (first, second, third, fourth):
        assert len(request.options.tools) == BUILTIN_AND_PAIR
        assert "time__get_current_time" not in _tool_names(request)
        assert "source_timezone" not in _wire(request)  # convert_time was never loaded
    # Each request is a byte-prefix of the next: the load changed nothing before it.
    for before, after in ((first, second), (second, third), (third, fourth)):
        assert _wire(after).startswith(_wire(before))
    # The loaded schema is byte-identical in every later request.
    assert search in _wire(fourth)


def test_a_read_only_git_tool_runs_without_approval_on_the_real_repository(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("hello\n")
    git = McpServer("git", command=(str(BIN / "mcp-server-git"), "--repository", str(repo)))

    async def scenario() -> Request:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, git)
        await session.start()
        _search_then_call(engine, "git_status", "git__git_status", {"repo_path": str(repo)})
        await session.send("What changed?")
        await session.close()
        return engine.answered[-1]

    _, called = _tool_results(asyncio.run(scenario()))
    assert "notes.txt" in called and "Untracked" in called


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.mcp_servers", "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait()


def test_a_streamable_http_server_answers_and_its_changing_tool_asks_first(
    tmp_path: Path, http_server: str
):
    web = McpServer("web", url=http_server)

    async def scenario() -> list[str]:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, web)
        await session.start()
        _search_then_call(engine, "reversed", "web__echo", {"text": "brim"})
        await session.send("Echo it")
        _search_then_call(engine, "store note", "web__store", {"note": "x"})
        await session.send("Store it")
        await session.close()
        return _tool_results(engine.answered[-1])

    results = asyncio.run(scenario())
    assert results[1] == "mirb"  # echo is read-only: it ran unasked
    assert results[3].startswith("Denied:")  # store may change things: headless deny


def _fault_server(mode: str, timeout_s: float = 60.0) -> McpServer:
    return McpServer(
        mode,
        command=(sys.executable, "-m", "tests.helpers.mcp_servers", mode),
        env=(("PYTHONPATH", str(ROOT)),),
        timeout_s=timeout_s,
    )


@pytest.mark.parametrize(
    ("mode", "kind", "timeout_s"),
    [
        ("exit", "mcp_start_failed", 60.0),
        ("garbage", "mcp_malformed_reply", 60.0),
        ("die", "mcp_server_exited", 60.0),
        ("hang", "mcp_timeout", 3.0),
    ],
)
def test_a_faulty_server_gives_its_own_error_and_the_next_turn_works(
    tmp_path: Path, mode: str, kind: str, timeout_s: float, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr("engine.mcp.connection.START_TIMEOUT_S", 8.0)
    server = _fault_server(mode, timeout_s)

    async def scenario() -> tuple[list[Event], InProcessEngine]:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, server)
        await session.start()
        _search_then_call(engine, "echo", f"{mode}__echo", {"text": "x"})
        await session.send("Try the tool")
        engine.script("Fine without it.")
        await session.send("Go on")
        await session.close()
        return events, engine

    events, engine = asyncio.run(scenario())
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and errors[0].kind == kind and errors[0].data["server"] == mode
    assert engine.answered[-1].messages[-1].content == "Go on"
    ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert len(ends) == 2


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep")
def test_no_server_is_left_after_brim_is_killed_outright(tmp_path: Path):
    """A child Brim starts a server that never reads its stdin (so its closing tells it
    nothing) and ignores SIGTERM and SIGHUP, then is SIGKILLed: the kernel's parent-death
    signal takes the server along."""
    marker = f"orphan-{tmp_path.name}"
    script = tmp_path / "brim_child.py"
    script.write_text(
        f"""
import asyncio, sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from tests.integration.test_mcp_tools import _session
from engine.config.mcp_servers import McpServer
line = "trap '' TERM HUP; exec {sys.executable} -m tests.helpers.mcp_servers deaf {marker}"
server = McpServer(  # always: started at the first turn (its schemas go in the request)
    "deaf", command=("sh", "-c", line), env=(("PYTHONPATH", {str(ROOT)!r}),), tier="always"
)
async def main():
    engine, session = _session(Path({str(tmp_path)!r}), [], server)
    await session.start()
    print("started", flush=True)
    await session.send("go")
asyncio.run(main())
"""
    )
    child = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"started"
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and not _servers(marker):
        time.sleep(0.2)
    assert _servers(marker), "the server never started"
    child.kill()
    child.wait()
    child.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _servers(marker):
        time.sleep(0.2)
    left = _servers(marker)
    for pid in left:  # the defect's own clean-up, so a failing run leaves nothing either
        subprocess.run(["kill", "-9", pid], check=False)
    assert not left


def _servers(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", f"mcp_servers deaf {marker}"], capture_output=True)
    return out.stdout.decode().split()


def test_a_server_marked_always_goes_eager_and_its_tool_is_called_directly(tmp_path: Path):
    always = McpServer(
        "time", command=(str(BIN / "mcp-server-time"), "--local-timezone", "UTC"), tier="always"
    )

    async def scenario() -> list[Request]:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, always)
        await session.start()
        call = json.dumps({"timezone": "UTC"})
        engine.script(tool_calls=[ToolCall("c1", "time__get_current_time", call)])
        engine.script("Done.")
        await session.send("What time is it?")
        await session.close()
        return engine.answered

    first, second = asyncio.run(scenario())
    assert "time__get_current_time" in _tool_names(first)
    assert "time__convert_time" in _tool_names(first)
    assert json.loads(_tool_results(second)[0])["timezone"] == "UTC"


def test_the_notice_that_loaded_tools_joined_the_tools_block_is_kept_in_the_conversation(
    tmp_path: Path,
):
    """Two call_tool misses in a row join the loaded tool to the tools block; the notice
    that says so (the engine's cache is rebuilt) is part of the conversation, with its
    figures, when it is opened again."""
    from engine.events import NOTICE_MCP_TOOLS_JOINED, NoticeEvent
    from engine.store import Store

    async def scenario() -> str:
        events: list[Event] = []
        engine, session = _session(tmp_path, events, TIME)
        await session.start()
        engine.script(tool_calls=[ToolCall("c1", "search_tools", '{"query": "current time"}')])
        for i in (2, 3):  # no timezone: the loaded schema refuses the call, twice
            miss = json.dumps({"name": "time__get_current_time", "arguments": {}})
            engine.script(tool_calls=[ToolCall(f"c{i}", "call_tool", miss)])
        engine.script("Done.")
        await session.send("What time is it?")
        await session.close()
        told = [e for e in events if isinstance(e, NoticeEvent)]
        assert [e.kind for e in told].count(NOTICE_MCP_TOOLS_JOINED) == 1
        return session.conversation_id

    conversation = asyncio.run(scenario())
    with Store.open(BrimPaths.resolve(tmp_path / "home").db_path) as store:
        kept = [m for m in store.messages(conversation) if m.is_notice]
    joined = [m for m in kept if m.meta_value("notice_kind") == NOTICE_MCP_TOOLS_JOINED]
    assert len(joined) == 1
    assert joined[0].meta_value("reason") == "calls_missed" and joined[0].meta_value("tools") == 1
