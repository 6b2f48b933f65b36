"""The agent editor's MCP section: the agent's `[[mcp]]` servers, added, removed and tested.

Adding takes a name and either a command line (a stdio server) or a URL (streamable HTTP),
refused with the loader's own reason (engine.api.parse_servers). Testing starts the server
on the engine thread and lists its tools with what each schema costs in tokens, or shows
the fault by kind; nothing here decides a rule, it shows the engine's answers.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
)

from engine.api import (
    AgentConfig,
    McpServer,
    ServerTest,
    check_agent_mcp_server,
    parse_servers,
)


class EngineCalls(Protocol):
    def call(
        self,
        fn: Callable[[], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None] | None = None,
    ) -> bool: ...


def describe(server: McpServer) -> str:
    where = server.url if server.url is not None else shlex.join(server.command)
    return f"{server.name} · {where} · {server.tier} · approve {server.approve}"


def describe_test(result: ServerTest) -> str:
    """A test's answer as the section shows it (HTML)."""
    if result.fault:
        return f"<b>{html.escape(result.server)}</b>: {result.fault}: {html.escape(result.error)}"
    rows = "".join(
        f"<br>{html.escape(t.name)} · {t.tokens:,} tokens{' · read-only' if t.read_only else ''}"
        for t in result.tools
    )
    counted = f"<br><i>counted: {html.escape(result.counting)}</i>" if result.counting else ""
    if result.schemas_unseen:
        counted += (
            "<br><b>This model's chat template leaves tool schemas out: it would not see "
            "these tools.</b> Pick a model that calls tools to use them."
        )
    return (
        f"<b>{html.escape(result.server)}</b>: {len(result.tools)} tools, "
        f"{result.tokens:,} tokens of schemas{rows}{counted}"
    )


class McpSection(QGroupBox):
    """The servers as a list; `servers()` is what the agent's file will say."""

    def __init__(
        self,
        servers: tuple[McpServer, ...],
        engine: EngineCalls,
        on_change: Callable[[], None],
        *,
        agent: Callable[[], AgentConfig | None],
        listings_dir: Path | None = None,
    ) -> None:
        """`agent` is the agent as edited (its engine counts the schemas); a tested server's
        listing is kept in `listings_dir`, where conversations read it."""
        super().__init__("MCP servers")
        self.setObjectName("mcpSection")
        self._servers = list(servers)
        self._engine = engine
        self._on_change = on_change
        self._agent = agent
        self._listings_dir = listings_dir
        self.list = QListWidget(objectName="mcpServers")
        self.list.setMaximumHeight(80)
        self.name = QLineEdit(placeholderText="name", objectName="mcpName")
        self.name.setMaximumWidth(90)
        self.target = QLineEdit(
            placeholderText="command line (stdio) or http:// URL", objectName="mcpTarget"
        )
        self.tier = QComboBox(objectName="mcpTier")
        self.tier.addItems(["deferred", "always"])
        self.add_button = QPushButton("Add")
        self.remove_button = QPushButton("Remove")
        self.test_button = QPushButton("Test")
        for button in (self.add_button, self.remove_button, self.test_button):
            button.setAutoDefault(False)
        self.add_button.clicked.connect(self.add)
        self.remove_button.clicked.connect(self.remove)
        self.test_button.clicked.connect(self.test)
        self.answer = QLabel("", objectName="mcpAnswer")
        self.answer.setWordWrap(True)
        entry = QHBoxLayout()
        entry.addWidget(self.name)
        entry.addWidget(self.target, 1)
        entry.addWidget(self.tier)
        entry.addWidget(self.add_button)
        actions = QHBoxLayout()
        actions.addWidget(self.remove_button)
        actions.addWidget(self.test_button)
        actions.addStretch(1)
        column = QVBoxLayout(self)
        column.addWidget(self.list)
        column.addLayout(entry)
        column.addLayout(actions)
        column.addWidget(self.answer)
        self._show()

    def servers(self) -> tuple[McpServer, ...]:
        return tuple(self._servers)

    def _show(self) -> None:
        self.list.clear()
        self.list.addItems([describe(s) for s in self._servers])
        self.remove_button.setEnabled(bool(self._servers))
        self.test_button.setEnabled(bool(self._servers))

    def add(self) -> None:
        text = self.target.text().strip()
        table: dict[str, Any] = {"name": self.name.text().strip(), "tier": self.tier.currentText()}
        if text.startswith(("http://", "https://")):
            table["url"] = text
        elif text:
            try:
                table["command"] = shlex.split(text)
            except ValueError as exc:
                self.answer.setText(html.escape(f"The command line does not parse: {exc}"))
                return
        try:
            added = parse_servers([*(s.table() for s in self._servers), table])
        except ValueError as exc:
            self.answer.setText(html.escape(str(exc)))
            return
        self._servers = list(added)
        self.name.clear()
        self.target.clear()
        self.answer.setText("")
        self._show()
        self.list.setCurrentRow(len(self._servers) - 1)
        self._on_change()

    def remove(self) -> None:
        row = self.list.currentRow()
        if 0 <= row < len(self._servers):
            del self._servers[row]
            self._show()
            self._on_change()

    def test(self) -> None:
        row = max(0, self.list.currentRow())
        if row >= len(self._servers):
            return
        server = self._servers[row]
        self.answer.setText(f"Starting {html.escape(server.name)}…")
        self.test_button.setEnabled(False)

        def done(result: ServerTest) -> None:
            self.test_button.setEnabled(True)
            self.answer.setText(describe_test(result))

        def failed(message: str) -> None:
            self.test_button.setEnabled(True)
            self.answer.setText(html.escape(message))

        agent = self._agent()
        if agent is None:
            self.test_button.setEnabled(True)
            self.answer.setText(
                "Fix the refused fields first: the test counts on the agent's engine."
            )
            return
        listings = self._listings_dir
        self._engine.call(lambda: check_agent_mcp_server(agent, server, listings), done, failed)
