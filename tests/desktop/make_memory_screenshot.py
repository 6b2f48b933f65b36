"""The memory review dialog with realistic suggestions, as the docs show it.

    QT_QPA_PLATFORM=offscreen python -m tests.desktop.make_memory_screenshot [OUT_DIR]

Writes, in docs/screenshots: memory-review.png (the dialog, a page with two items checked),
memory-queue.png (the window behind it: the review queue under the context rail and the
waiting badge) and memory-browser.png (the browser on an entry, after Explain). The window
is the real app on the engine's own session over a scripted in-process engine, opened on
the conversation the suggestions quote (saved in a temporary data folder);
every suggestion is queued through the same checks the extractor's are (quote
authentication, subject rules, one claim per sentence), in a temporary memory root.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QEventLoop
from PySide6.QtWidgets import QWidget

from desktop.app import DesktopApp, ensure_application
from desktop.screenshot import grab_window
from engine.memory import MemoryService, SourceSet
from engine.memory.tools import (
    MemoryToolState,
    plan_fact,
    plan_lesson,
    plan_revision,
    queue_fact,
    queue_lesson,
)
from engine.messages import Message, assistant, user
from tests.helpers.fake_provider import InProcessEngine
from tests.helpers.scripted_session import ScriptedSessions

DEFAULT_OUT = Path("docs/screenshots")
WORKSPACE = Path("/home/ana/src/brim")
DIALOG_SIZE = (820, 650)

SAID = {
    "spelling": "Please always use British spelling in anything you write for me.",
    "tests": "Before you commit anything in this repo, run pytest -q from the root.",
    "editor": "I switched from Neovim to Helix last month, so give me Helix keybindings.",
    "timezone": "I'm in Berlin, so when you mention times, use Central European Time.",
}

HISTORY: list[Message] = [
    user(f"Hi! {SAID['spelling']} Can you tidy up the README's install section?"),
    assistant("Here is the install section, tidied and in British spelling: …"),
    user(f"Thanks. {SAID['tests']} It has bitten me twice this week."),
    assistant("Understood; I'll run `pytest -q` from the repository root before any commit."),
    user(f"{SAID['editor']} How do I jump to a definition?"),
    assistant("In Helix, `gd` goes to the definition; `space` + `s` opens the symbol picker."),
    user(f"{SAID['timezone']} When does the nightly job run?"),
    assistant("The nightly job runs at 02:10 CET."),
]


def pump_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not reach the expected state")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)


def pump_for(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)


def queue_suggestions(service: MemoryService, conversation: str) -> None:
    """Six waiting suggestions of every kind, over the conversation above (saved as
    `conversation`)."""
    sources = SourceSet(conversation, HISTORY)
    state = MemoryToolState(
        service, service.scopes("coder", WORKSPACE), lambda: sources, "queue", actor="test"
    )

    def fact(scope: str, subject: str, content: str, quote: str, action: str = "create") -> None:
        plan = plan_fact(
            state,
            action=action,
            scope=scope,
            subject=subject,
            content=content,
            quote=quote,
            source=None,
            require_view=False,
        )
        queue_fact(state, plan)

    # What memory held before this conversation: the editor, the Python version.
    old = user("I edit everything in Neovim.")
    before = MemoryToolState(
        service, state.scopes, lambda: SourceSet("earlier", [old]), "queue", actor="test"
    )
    first = queue_fact(
        before,
        plan_fact(
            before,
            action="create",
            scope="global",
            subject="editor",
            content="The user edits everything in Neovim.",
            quote=old.content,
            source=None,
            require_view=False,
        ),
    )
    service.accept([first.id])
    lesson = plan_lesson(
        state,
        scope="agent",
        subject="python-version",
        content="Target Python 3.8: the user's servers cannot run anything newer.",
    )
    service.accept([queue_lesson(state, lesson).id])

    fact(
        "global",
        "spelling",
        "The user always wants British spelling in anything you write for them.",
        SAID["spelling"],
    )
    fact(
        "project",
        "testing",
        "Run pytest -q from the root before you commit anything in this repo.",
        SAID["tests"],
    )
    fact(
        "global",
        "editor",
        "The user switched from Neovim to Helix; give them Helix keybindings.",
        SAID["editor"],
        action="amend",
    )
    fact(
        "global",
        "timezone",
        "The user is in Berlin; when you mention times, use Central European Time.",
        SAID["timezone"],
    )
    queue_lesson(
        state,
        plan_lesson(
            state,
            scope="agent",
            subject="build-errors",
            content="When a build fails, read the first error, not the last: the later ones "
            "in this project are usually cascades of it.",
        ),
    )
    service.queue.add(
        plan_revision(
            state,
            action="delete",
            path="agents/coder/python-version.md",
            content=None,
            reason="The project's CI now runs Python 3.12; the 3.8 constraint is gone.",
        )
    )


def scripted_sessions(root: Path) -> ScriptedSessions:
    """The conversation above, saved under `root`, on a 32K engine."""
    return ScriptedSessions.on(
        root,
        InProcessEngine(window=32768),
        history=list(HISTORY),
        name="coder",
        model="qwen2.5-coder-7b-instruct-q4_k_m",
    )


def _save(widget: QWidget, path: Path, size: tuple[int, int]) -> Path:
    widget.resize(*size)
    pump_for(0.2)
    return grab_window(widget, path, size)


def make_memory_screenshots(out: Path = DEFAULT_OUT) -> list[Path]:
    ensure_application()
    with tempfile.TemporaryDirectory(prefix="brim-memory-shot-") as tmp:
        service = MemoryService(Path(tmp) / "memory")
        sessions = scripted_sessions(Path(tmp))
        assert sessions.conversation_id is not None
        queue_suggestions(service, sessions.conversation_id)
        app = DesktopApp(sessions.factory, memory_root=service.root)
        try:
            window = app.window
            window.resize(1280, 800)
            window.show()
            desk = app.memory
            assert desk is not None
            pump_until(lambda: app.bridge.started and desk.reads > 0)
            pump_until(lambda: window.review_queue.waiting == 6)
            queue_shot = _save(window, out / "memory-queue.png", (1280, 800))
            dialog = desk.open_review()
            pump_until(lambda: len(dialog.items()) == 6 and not dialog.busy)
            items = dialog.items()
            items[0].check.setChecked(True)
            items[1].check.setChecked(True)
            dialog.activateWindow()
            pump_for(0.1)
            items[2].check.setFocus()  # the keyboard is on the third item
            review_shot = _save(dialog, out / "memory-review.png", DIALOG_SIZE)
            dialog.reject()
            pump_for(0.1)
            browser = desk.open_browser()
            pump_until(lambda: browser.loads > 0)
            browser.select("global/editor.md")
            browser.explain_selected()
            pump_until(lambda: "Receipts" in browser.receipts.text())
            browser_shot = _save(browser, out / "memory-browser.png", (900, 560))
            browser.close()
        finally:
            app.shutdown()
            app.window.close()
            app.window.deleteLater()
            pump_for(0.05)
        return [review_shot, queue_shot, browser_shot]


if __name__ == "__main__":
    for shot in make_memory_screenshots(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(shot)
