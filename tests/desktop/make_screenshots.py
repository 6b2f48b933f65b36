"""The README's screenshots: the real app, real sessions, a fake llama-server, 1280x800.

    QT_QPA_PLATFORM=offscreen python -m tests.desktop.make_screenshots [OUT_DIR]

Writes three PNGs (default folder docs/screenshots):

- conversation.png: the main window mid-conversation: agents and conversations in the
  sidebar, a tool call, a highlighted answer with its receipt, the next answer streaming.
- rail-after-compaction.png: an agent reading large log files on an 8K window: clearing,
  an automatic compaction (its notice row) and the rail's timeline with its markers.
- context-overlay.png: `/context` over the same conversation.

Nothing is drawn by hand: the app runs its usual start-up on a temporary data folder with
agent files pointing at `tests.helpers.fake_engines.FakeLlamaServer`, and every number in
the pictures comes from the engine.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QEventLoop, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from desktop.app import DesktopApp, ensure_application
from desktop.screenshot import grab_window
from engine.paths import BrimPaths
from tests.engine.memory.fakes import role_of
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, Reply

DEFAULT_OUT = Path("docs/screenshots")
MODEL = "qwen2.5-coder-7b-instruct-q4_k_m"

SUMMARY = """## Goal
Find why the nightly import job slowed down in March.
## Constraints & Preferences
Read the logs only; change nothing.
## Covered So Far
- logs/import-03-01.log … logs/import-03-06.log
## Progress
### Done
- Read six daily logs; retries grow from 2 to 41 per night.
### In Progress
- Checking the later logs for the same pattern.
### Blocked
- none
## Key Decisions
- The slowdown follows the retry count, not the data volume.
## Next Steps
- Read the remaining logs and compare retry counts.
## Critical Context
- Timeouts start at 02:10 every night.
"""

NOTES = " ".join(
    ["Brim keeps the stable prompt at the head of every request so engines reuse their cache."] * 24
)

WORD_ANSWER = (
    "`notes.md` has **312 words**. Counting them is one line of Python:\n\n"
    "```python\n"
    "from pathlib import Path\n\n"
    'words = len(Path("notes.md").read_text(encoding="utf-8").split())\n'
    "print(words)  # 312\n"
    "```\n\n"
    "`split()` with no argument splits on any run of whitespace, so blank lines and tabs "
    "are not counted as words."
)

FUNCTION_ANSWER = (
    "Here is a small function with a test. It keeps line numbers so the report can point "
    "at the long lines:\n\n"
    "```python\n"
    "def words_per_line(text: str) -> list[int]:\n"
    '    """How many words each line holds, in order."""\n'
    "    return [len(line.split()) for line in text.splitlines()]\n\n\n"
    "def test_words_per_line_counts_each_line():\n"
    '    assert words_per_line("a b\\n\\nc") == [2, 0, 1]\n'
    "```\n\n"
    "Run it with `pytest -q`; an empty line counts as zero words, which is what a per-line "
    "report wants."
)


def pump_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            window = next(
                (w for w in QApplication.topLevelWidgets() if hasattr(w, "transcript")), None
            )
            shown = window.transcript.toPlainText()[-300:] if window is not None else ""
            if window is not None:
                shown += f"\n[state: {window.header.text()}; busy: {window.bridge.busy}]"
            raise TimeoutError(f"the window did not reach the expected state:\n{shown}")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)


def pump_for(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)


def agent_file(name: str, url: str, prompt: str) -> str:
    return (
        f'name = "{name}"\nprovider = "llamacpp"\nbase_url = "{url}"\nmodel = "{MODEL}"\n'
        f'system_prompt = "{prompt}"\n'
    )


def send(app: DesktopApp, text: str, *, wait: bool = True) -> None:
    window = app.window
    window.composer.setPlainText(text)
    QTest.keyClick(window.composer, Qt.Key.Key_Return)
    if wait:
        pump_until(lambda: not app.bridge.busy)


def new_conversation(app: DesktopApp) -> None:
    assert app.navigator is not None
    before = app.navigator.conversation_id
    app.window.new_conversation()
    pump_until(lambda: app.navigator.conversation_id != before and not app.bridge.busy)


def close(app: DesktopApp) -> None:
    """Shut down, then let Qt delete the window while Python still holds it."""
    app.shutdown()
    app.window.close()
    app.window.deleteLater()
    pump_for(0.05)


def start(paths: BrimPaths, workspace: Path | None) -> DesktopApp:
    app = DesktopApp(paths=paths, workspace=workspace, reflect_on_close=False)
    app.window.resize(1280, 800)
    app.window.show()
    pump_until(lambda: app.navigator is not None and app.navigator.conversation_id is not None)
    pump_until(lambda: app.window.header.state() == "ready")
    return app


def _last_user(request: Any, pattern: str = "") -> str:
    """The newest user message (matching `pattern`), skipping Brim's pressure nudges."""
    for message in reversed(request.body["messages"]):
        content = str(message.get("content") or "")
        if message.get("role") != "user" or content.startswith(("[CONTEXT", "[ITERATION")):
            continue
        if not pattern or re.search(pattern, content):
            return content
    return ""


def _answered_by_tool(request: Any) -> bool:
    """The newest message that is not Brim's pressure nudge is a tool result."""
    for message in reversed(request.body["messages"]):
        content = str(message.get("content") or "")
        if message.get("role") == "user" and content.startswith(("[CONTEXT", "[ITERATION")):
            continue
        return message.get("role") == "tool"
    return False


def conversation_shot(root: Path, out: Path) -> Path:
    workspace = root / "project"
    workspace.mkdir()
    (workspace / "notes.md").write_text(NOTES + "\n", encoding="utf-8")
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    with FakeLlamaServer(n_ctx=32768, slots=1, model=MODEL) as fake:

        def respond(request: Any) -> Reply:
            if _answered_by_tool(request):
                return Reply(text=WORD_ANSWER, token_delay=0.02)
            asked = _last_user(request)
            if asked.startswith("How many words"):
                return Reply(
                    text="I'll read the file first.",
                    tool_calls=[FakeToolCall("read_file", {"path": "notes.md"})],
                )
            if asked.startswith("Write a function"):
                return Reply(text=FUNCTION_ANSWER, token_delay=0.006)
            if asked.startswith("Why is"):
                return Reply(text="The cache volume is recreated on every run.")
            return Reply(text="Here is a first draft of the notes.")

        fake.responder = respond
        prompt = "You are a careful coding assistant. Prefer the standard library."
        (paths.agents_dir / "coder.toml").write_text(agent_file("coder", fake.url, prompt))
        (paths.agents_dir / "writer.toml").write_text(
            agent_file("writer", fake.url, "You edit release notes.")
        )
        app = start(paths, workspace)
        try:
            send(app, "Why is the nightly build slower than the local one?")
            new_conversation(app)
            send(app, "Draft the release notes for 0.4")
            new_conversation(app)
            send(app, "How many words are in notes.md?")
            send(
                app,
                "Write a function that counts the words on each line, with a test.",
                wait=False,
            )
            pump_until(lambda: "line numbers so the report" in app.window.transcript.toPlainText())
            pump_until(lambda: "def test_words" in app.window.transcript.toPlainText())
            pump_for(0.1)
            shot = grab_window(app.window, out / "conversation.png")
            pump_until(lambda: not app.bridge.busy)
        finally:
            close(app)
    return shot


def compaction_shots(root: Path, out: Path) -> list[Path]:
    workspace = root / "service"
    (workspace / "logs").mkdir(parents=True)
    for day in range(1, 15):
        lines = [
            f"2025-03-{day:02d} {2 + minute // 60:02d}:{minute % 60:02d}:11 import batch={minute} "
            f"rows=5000 "
            f"retries={day * 3 + minute % 4} status=ok"
            for minute in range(130)
        ]
        (workspace / "logs" / f"import-03-{day:02d}.log").write_text("\n".join(lines) + "\n")
    (workspace / "AGENTS.md").write_text(
        "Logs live in logs/. Never change them; report what you find.\n", encoding="utf-8"
    )
    paths = BrimPaths.under(root / "home2")
    paths.agents_dir.mkdir(parents=True)
    with FakeLlamaServer(n_ctx=8192, slots=1, model=MODEL) as fake:

        def respond(request: Any) -> Reply:
            if is_compaction(request.body):
                return Reply(text=SUMMARY)
            if role_of(request.body) == "extractor":  # nothing durable in a log audit
                return Reply(text='{"memories": [], "lessons": []}')
            if _answered_by_tool(request):
                result = next(
                    str(m.get("content"))
                    for m in reversed(request.body["messages"])
                    if m.get("role") == "tool"
                )
                day = int(re.findall(r"2025-03-(\d+)", result)[0])
                return Reply(
                    text=f"March {day}: {day * 3} retries at 02:00, climbing through the night; "
                    "the first timeout is at 02:10."
                )
            day = int(re.findall(r"March (\d+)", _last_user(request, r"March \d+"))[-1])
            path = f"logs/import-03-{day:02d}.log"
            return Reply(
                text=f"Reading {path}.", tool_calls=[FakeToolCall("read_file", {"path": path})]
            )

        fake.responder = respond
        (paths.agents_dir / "auditor.toml").write_text(
            agent_file("auditor", fake.url, "You audit logs and report findings.")
        )
        app = start(paths, workspace)
        shots: list[Path] = []
        try:
            compacted_at = None
            for day in range(1, 15):
                send(app, f"Read the import log for March {day} and tell me what changed.")
                kinds = app.window.rail.timeline.marker_kinds()
                if compacted_at is None and "compaction" in kinds:
                    compacted_at = day
                if compacted_at is not None and day >= compacted_at + 1:
                    break
            pump_for(0.2)
            shots.append(grab_window(app.window, out / "rail-after-compaction.png"))
            send(app, "/context", wait=False)
            pump_until(lambda: app.window.overlay.isVisible())
            pump_for(0.2)
            shots.append(grab_window(app.window, out / "context-overlay.png"))
        finally:
            close(app)
    return shots


def make_screenshots(out: Path = DEFAULT_OUT) -> list[Path]:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brim-shots-") as tmp:
        root = Path(tmp)
        return [conversation_shot(root, out), *compaction_shots(root, out)]


if __name__ == "__main__":
    for path in make_screenshots(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(path)
