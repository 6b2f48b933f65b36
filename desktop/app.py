"""Start the desktop: the engine thread, the bridge, the approver, the window, the library.

A real start lists the agents from the data folder and opens the last conversation (or a new
one); tests and screenshots may instead hand in a single scripted session factory, in which
case the sidebar stays hidden. Either way the engine's modules load only when they run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from desktop.agent_desk import AgentDesk
from desktop.agent_editing import AgentEditing
from desktop.approval import DialogApprover
from desktop.bridge import EngineBridge, SessionFactory
from desktop.engine_thread import EngineThread
from desktop.errors import EngineStopped
from desktop.main_window import MainWindow
from desktop.memory_desk import MemoryDesk
from desktop.navigator import MakeSession, Navigator, chat_session_maker
from desktop.ports import SendingWindow
from desktop.xcb_check import xcb_problem
from engine.api import (
    BrimPaths,
    Library,
)


@dataclass(frozen=True)
class AppOptions:
    data_dir: Path | None = None
    send: str | None = None
    screenshot: Path | None = None
    workspace: Path | None = None


def parse_args(argv: list[str] | None) -> AppOptions:
    parser = argparse.ArgumentParser(
        prog="brim", description="Brim: a desktop agent for local models."
    )
    parser.add_argument("--data-dir", type=Path, help="keep all of Brim's files under DIR")
    parser.add_argument("--send", metavar="TEXT", help="send TEXT as the first message")
    parser.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="the folder new conversations work in (tools are off without one)",
    )
    parser.add_argument(
        "--screenshot",
        type=Path,
        metavar="PNG",
        help="after the first turn (or start-up), save the window at 1280x800 and quit",
    )
    args = parser.parse_args(argv)
    return AppOptions(
        data_dir=args.data_dir,
        send=args.send,
        screenshot=args.screenshot,
        workspace=args.workspace,
    )


class DesktopApp:
    """The parts of a running desktop, started together and shut down in order."""

    def __init__(
        self,
        session_factory: SessionFactory | None = None,
        *,
        paths: BrimPaths | None = None,
        make_session: MakeSession | None = None,
        workspace: Path | None = None,
        memory_root: Path | None = None,
        reflect_on_close: bool = True,
    ) -> None:
        self.engine = EngineThread()
        self.engine.start()
        self.approver = DialogApprover()
        self.bridge = EngineBridge(self.engine)
        self.window = MainWindow(self.bridge, self.approver)
        self.library: Library | None = None
        self.navigator: Navigator | None = None
        self.agent_editing: AgentEditing | None = None
        self.agents: AgentDesk | None = None  # new, duplicate, delete; the folder watched
        self.memory: MemoryDesk | None = None  # memory_root, else the data folder's memory
        self._closed = False
        if memory_root is None and paths is not None:
            memory_root = paths.memory_dir
        window = self.window
        if paths is not None:
            self.library = Library(paths)
            self.navigator = Navigator(
                window,
                self.bridge,
                self.library,
                self.approver,
                make_session or chat_session_maker(paths, reflect_on_close=reflect_on_close),
                workspace=workspace,
            )
            self.navigator.conversation_changing.connect(window.prepare_for_conversation)
            self.agent_editing = AgentEditing(window, self.bridge, self.navigator)
            self.agents = AgentDesk(window, self.bridge, self.navigator, self.agent_editing, paths)
            self.memory = self._memory_desk(memory_root or paths.memory_dir, self.navigator)
            self.navigator.start()
        else:
            window.hide_sidebar()
            if memory_root is not None:
                self.memory = self._memory_desk(memory_root)
            if session_factory is not None:
                self.bridge.open(session_factory)

    def _memory_desk(self, root: Path, navigator: Navigator | None = None) -> MemoryDesk:
        return MemoryDesk(self.window, self.bridge, root, navigator=navigator)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel the turn, close the session and the library, stop the engine thread.
        Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.memory is not None:
            self.memory.close()
        if self.agents is not None:
            self.agents.close()
        self.bridge.close(timeout)
        if self.library is not None:
            library = self.library

            async def close_library() -> None:
                library.close()

            with contextlib.suppress(EngineStopped, concurrent.futures.TimeoutError, Exception):
                self.engine.submit(close_library()).result(timeout)
        self.engine.stop(timeout)


def ensure_application() -> QApplication:
    existing = QCoreApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    app = QApplication([sys.argv[0] if sys.argv else "brim"])
    app.setApplicationName("Brim")
    app.setOrganizationName("Brim")
    app.setDesktopFileName("io.brim.Brim")
    return app


NO_DISPLAY = (
    "brim: there is no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset).\n"
    "Start Brim from a desktop session, use `brim chat --headless` in a terminal, or set "
    "QT_QPA_PLATFORM=offscreen to run the window without a screen."
)


def display_problem(env: Mapping[str, str]) -> str | None:
    """Why a window cannot open here, before Qt aborts the process with a less helpful line:
    on Linux without a display server and without an explicit Qt platform."""
    if not sys.platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return NO_DISPLAY


def main(argv: list[str] | None = None, *, session_factory: SessionFactory | None = None) -> int:
    options = parse_args(argv)
    problem = display_problem(os.environ) or xcb_problem(os.environ)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    app = ensure_application()
    if session_factory is not None:
        desktop = DesktopApp(session_factory)
    else:
        desktop = DesktopApp(
            paths=BrimPaths.resolve(options.data_dir),
            workspace=options.workspace,
            # A one-shot picture is not a conversation the user left: nothing to reflect on.
            reflect_on_close=options.screenshot is None,
        )
    capture = None
    if options.screenshot is not None:
        from desktop.screenshot import ScriptedCapture

        capture = ScriptedCapture(desktop.window, desktop.bridge, options.screenshot, options.send)
        if desktop.navigator is not None:  # no session will open: capture the banner
            desktop.navigator.startup_failed.connect(capture.capture_soon)
    elif options.send:
        sent = False

        def send_first(_info: object) -> None:
            nonlocal sent
            if not sent:
                sent = True
                _send_first(desktop.window, options.send)

        desktop.bridge.opened.connect(send_first)
    desktop.window.show()
    try:
        app.exec()
    finally:
        if desktop.navigator is not None:
            desktop.navigator.save_window()
        desktop.shutdown()
        desktop.window.deleteLater()
    if capture is not None and capture.error:
        print(f"brim: {capture.error}", file=sys.stderr)
        return 1
    return 0


def _send_first(window: SendingWindow, text: str | None) -> None:
    if text:
        window.send_message(text)
