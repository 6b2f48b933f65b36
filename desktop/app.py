"""Start the desktop: the engine thread, the bridge, the session and the window.

The session comes from a factory so tests and screenshots can hand in a scripted one; the
real factory imports the engine's session module only when it runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from desktop.bridge import EngineBridge, SessionFactory
from desktop.engine_thread import EngineThread
from desktop.main_window import MainWindow
from engine.events import EventSink


@dataclass(frozen=True)
class AppOptions:
    data_dir: Path | None = None
    send: str | None = None
    screenshot: Path | None = None


def parse_args(argv: list[str] | None) -> AppOptions:
    parser = argparse.ArgumentParser(
        prog="brim", description="Brim: a desktop agent for local models."
    )
    parser.add_argument("--data-dir", type=Path, help="keep all of Brim's files under DIR")
    parser.add_argument("--send", metavar="TEXT", help="send TEXT as the first message")
    parser.add_argument(
        "--screenshot",
        type=Path,
        metavar="PNG",
        help="after the first turn (or start-up), save the window at 1280x800 and quit",
    )
    args = parser.parse_args(argv)
    return AppOptions(data_dir=args.data_dir, send=args.send, screenshot=args.screenshot)


def default_session_factory(options: AppOptions) -> SessionFactory:
    """A factory for the default agent's session, opened on the engine thread."""

    def factory(sink: EventSink):  # type: ignore[no-untyped-def]
        from engine.session import open_default_session  # the engine loads only when needed

        return open_default_session(sink, data_dir=options.data_dir)

    return factory


class DesktopApp:
    """The parts of a running desktop, started together and shut down in order."""

    def __init__(self, session_factory: SessionFactory) -> None:
        self.engine = EngineThread()
        self.engine.start()
        self.bridge = EngineBridge(self.engine)
        self.window = MainWindow(self.bridge)
        self.bridge.open(session_factory)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel the turn, close the session, stop the engine thread. Safe to call twice."""
        self.bridge.close(timeout)
        self.engine.stop(timeout)


def ensure_application() -> QApplication:
    existing = QCoreApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    app = QApplication([sys.argv[0] if sys.argv else "brim"])
    app.setApplicationName("Brim")
    app.setOrganizationName("Brim")
    app.setDesktopFileName("brim")
    return app


def main(argv: list[str] | None = None, *, session_factory: SessionFactory | None = None) -> int:
    options = parse_args(argv)
    app = ensure_application()
    desktop = DesktopApp(session_factory or default_session_factory(options))
    capture = None
    if options.screenshot is not None:
        from desktop.screenshot import ScriptedCapture

        capture = ScriptedCapture(desktop.window, desktop.bridge, options.screenshot, options.send)
    elif options.send:
        desktop.bridge.opened.connect(lambda _info: _send_first(desktop.window, options.send))
    desktop.window.show()
    try:
        app.exec()
    finally:
        desktop.shutdown()
        desktop.window.deleteLater()
    if capture is not None and capture.error:
        print(f"brim: {capture.error}", file=sys.stderr)
        return 1
    return 0


def _send_first(window: MainWindow, text: str | None) -> None:
    if text:
        window.composer.setPlainText(text)
        window.composer.submit()
