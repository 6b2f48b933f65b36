"""The agent editor's MCP section: a server added goes into the agent as edited, a bad one
is refused with the loader's reason, and Test shows the tools with their schema costs, as
the agent's engine counts them, and keeps the listing where conversations read it."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path

from desktop.mcp_section import McpSection
from engine.api import McpServer
from engine.config import default_agent
from engine.mcp.listing_cache import ListingCache

TIME = McpServer(
    "time",
    command=(str(Path(sys.executable).parent / "mcp-server-time"), "--local-timezone", "UTC"),
)


class Calls:
    def call(self, fn, on_result, on_error=None):
        value = fn()
        on_result(asyncio.run(value) if inspect.isawaitable(value) else value)
        return True


def test_a_server_is_added_refused_with_its_reason_removed_and_tested(qtbot, tmp_path):
    changes: list[int] = []
    section = McpSection(
        (TIME,), Calls(), lambda: changes.append(1), agent=default_agent, listings_dir=tmp_path
    )
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
    # Counted by the bundled model's own tokenizer and template (the agent's engine), and
    # said so: SmolLM2's template renders no tools block, so the model would not see them.
    assert "counted: exact" in section.answer.text()
    assert "leaves tool schemas out" in section.answer.text()
    # The listing is kept: the agent's next conversation knows the tools without a start.
    kept = ListingCache(tmp_path).read(TIME)
    assert kept is not None and [t.name for t in kept] == ["get_current_time", "convert_time"]


def test_a_test_with_a_refused_field_says_so_and_starts_nothing(qtbot, tmp_path):
    section = McpSection((TIME,), Calls(), lambda: None, agent=lambda: None, listings_dir=tmp_path)
    qtbot.addWidget(section)
    section.list.setCurrentRow(0)
    section.test()
    assert "Fix the refused fields first" in section.answer.text()
    assert section.test_button.isEnabled()
    assert ListingCache(tmp_path).read(TIME) is None
