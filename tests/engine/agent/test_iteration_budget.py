"""The iteration budget warns before it fires, in every run, not only the first one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.config import default_agent
from engine.events import Event, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, Reply


def test_every_run_warns_at_50_and_70_percent_of_its_iterations_then_stops_at_the_cap(
    tmp_path: Path,
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a few notes", encoding="utf-8")
    events: list[Event] = []
    with FakeLlamaServer(n_ctx=8192) as fake:
        # A model that never stops calling tools: every run ends at its cap of 4.
        fake.responder = lambda request: Reply(
            text="", tool_calls=[FakeToolCall("list_directory", {"path": "."})]
        )
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model, max_iterations=4
        )

        async def go() -> None:
            session = ChatSession(
                agent, BrimPaths.resolve(tmp_path / "home"), events.append, workspace=ws
            )
            await session.start()
            try:
                await session.send("Look around.")
                await session.send("continue")
            finally:
                await session.close()

        asyncio.run(go())
    notices = [e.text for e in events if isinstance(e, NoticeEvent) and e.level == "warning"]
    one_run = [
        "iteration budget 50% used (2/4) - run stops at the limit, type 'continue' to keep it "
        "going",
        "iteration budget 70% used (3/4) - run stops at the limit, type 'continue' to keep it "
        "going",
        "Iteration limit reached (4/4): the run stops here. Type 'continue' to keep it going.",
    ]
    ramp = [t for t in notices if t.startswith(("iteration budget", "Iteration limit"))]
    assert ramp == one_run + one_run
