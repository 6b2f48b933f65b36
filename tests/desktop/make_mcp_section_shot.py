"""Draws docs/screenshots/agent-editor-mcp.png: the agent editor's MCP section after a
Test of the registry's time server (run under xvfb-run with the output path)."""

import asyncio
import inspect
import sys
import tempfile
from pathlib import Path

from PySide6.QtWidgets import QApplication

from desktop.agent_editor import AgentEditorDialog
from engine.api import load_agent

BIN = Path(sys.executable).parent


class Calls:
    def call(self, fn, on_result, on_error=None):
        value = fn()
        if inspect.isawaitable(value):
            value = asyncio.run(value)
        on_result(value)
        return True

    def session_call(self, *a, **k):
        return False


app = QApplication([])
d = Path(tempfile.mkdtemp())
p = d / "coder.toml"
p.write_text(f'''name = "coder"
provider = "llamacpp"
model = "qwen2.5-coder-7b"

[[mcp]]
name = "time"
command = ["{BIN}/mcp-server-time", "--local-timezone", "UTC"]
''')
dlg = AgentEditorDialog(load_agent(p), Calls())
dlg.show()
app.processEvents()
sec = dlg.mcp_section
sec.name.setText("git")
sec.target.setText(f"{BIN}/mcp-server-git --repository /work/wt-mcp")
sec.add()
sec.list.setCurrentRow(0)
sec.test()
app.processEvents()
for _ in range(20):
    app.processEvents()
out = sys.argv[1]
dlg.grab().save(out)
print(sec.answer.text()[:300])
print(dlg.edited().mcp)
