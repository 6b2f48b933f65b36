"""The agent editor's MCP section: a server added goes into the agent as edited, a bad one
is refused with the loader's reason, and Test shows the tools with their schema costs."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path

from desktop.mcp_section import McpSection
from engine.api import McpServer

TIME = McpServer(
    "time",
    command=(str(Path(sys.executable).parent / "mcp-server-time"), "--local-timezone", "UTC"),
)


class Calls:
    def call(self, fn, on_result, on_error=None):
        value = fn()
        on_result(asyncio.run(value) if inspect.isawaitable(value) else value)
        return True


def test_a_server_is_added_refused_with_its_reason_removed_and_tested(qtbot):
    changes: list[int] = []
    section = McpSection((TIME,), Calls(), lambda: changes.append(1))
    qtbot.addWidget(section)
    section.name.setText("time")
    section.target.setText("other-server")
    section.add()
    assert "a second server of that name" in section.answer.text()
    section.name.setText("web")
    section.target.setText("http://127.0.0.1:8765/mcp")
    section.add()
    assert [s.name for s in section.servers()] == ["time", "web"]
    assert section.servers()[1].url == "http://127.0.0.1:8765/mcp"
    section.remove()
    assert [s.name for s in section.servers()] == ["time"] and len(changes) == 2
    section.list.setCurrentRow(0)
    section.test()
    assert "time</b>: 2 tools" in section.answer.text()
    assert "time__get_current_time · " in section.answer.text()
