"""Screenshots of the live window, for the docs and for checking a build by eye.

`--screenshot PATH` (with `--send TEXT`) runs one real exchange, grabs the window at a fixed
size once the turn is over, and quits: the same code path as a user's session, captured.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QApplication, QWidget

from desktop.bridge import EngineBridge, SessionInfo
from desktop.errors import DesktopError
from desktop.ports import SendingWindow
from engine.api import (
    ErrorEvent,
    Event,
)

SCREENSHOT_SIZE = (1280, 800)


class ScreenshotFailed(DesktopError):
    """Qt could not write the image (unwritable folder, unknown format)."""


def grab_window(window: QWidget, path: Path, size: tuple[int, int] = SCREENSHOT_SIZE) -> Path:
    """Lay the window out at `size` and save what it paints as an image file."""
    window.resize(*size)
    QApplication.processEvents()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(path)):
        raise ScreenshotFailed(f"could not write a screenshot to {path}")
    return path


class ScriptedCapture(QObject):
    """Send one message once the session is open, capture the window when the turn ends."""

    def __init__(
        self,
        window: SendingWindow,
        bridge: EngineBridge,
        path: Path,
        send: str | None,
        *,
        settle_ms: int = 150,
    ) -> None:
        super().__init__(window.as_widget())
        self._window = window
        self._bridge = bridge
        self._path = path
        self._send = send
        self._settle_ms = settle_ms
        self._done = False
        self.error: str | None = None
        bridge.opened.connect(self._on_opened)
        bridge.event.connect(self._on_event)
        bridge.turn_finished.connect(self.capture_soon)

    @Slot(object)
    def _on_opened(self, _: SessionInfo) -> None:
        if self._send:
            self._window.send_message(self._send)
        else:
            self.capture_soon()

    @Slot(object)
    def _on_event(self, event: Event) -> None:
        if isinstance(event, ErrorEvent) and not self._bridge.busy:
            self.capture_soon()  # the session did not open: capture the banner that says why

    @Slot()
    def capture_soon(self) -> None:
        QTimer.singleShot(self._settle_ms, self._capture)

    @Slot()
    def _capture(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            grab_window(self._window.as_widget(), self._path)
        except ScreenshotFailed as exc:
            self.error = str(exc)
        # exit(), not quit(): quit() goes through the platform, which may deliver a second
        # exit after exec() returned and stop every later event loop in this process.
        QApplication.exit(0)
