"""Fixtures for the desktop tests: a window on the engine's own session over a scripted
engine (tests/helpers/scripted_session.py), and two guards.

Every test here fails if Qt logs a warning or if a thread it started is still running after
it ends (the engine thread must be stopped, not abandoned).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if os.environ["QT_QPA_PLATFORM"] == "offscreen":
    # The offscreen platform's own screen is 800x800, smaller than the window's 1280x800:
    # the window would be fitted onto it. Tests run on a desktop-sized screen instead.
    SCREEN = Path(__file__).with_name("offscreen-screen.json")
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={SCREEN}"

from desktop.app import DesktopApp
from engine.memory import MemoryService
from engine.paths import BrimPaths
from tests.helpers.fake_provider import InProcessEngine
from tests.helpers.scripted_session import ScriptedSessions, WatchedSession

QT_FAULT_TYPES = ("QtWarningMsg", "QtCriticalMsg", "QtFatalMsg")
# The offscreen platform plugin says these whenever a top-level window's size constraints
# change or a popup (the command completer) opens; they describe the test platform, not
# the application.
PLATFORM_NOISE = (
    "This plugin does not support propagateSizeHints()",
    "This plugin does not support raise()",
    "This plugin does not support grabbing the keyboard",
)


@pytest.fixture(autouse=True)
def no_qt_warnings(qtlog: Any) -> Iterator[None]:
    yield
    faults = [
        f"{r.type_name}: {r.message}"
        for r in qtlog.records
        if r.type_name in QT_FAULT_TYPES and r.message not in PLATFORM_NOISE
    ]
    assert faults == []


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        leaked = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leaked:
            return
        time.sleep(0.02)
    assert leaked == []


@dataclass
class OpenDesktop:
    """The window on real sessions (`sessions`) over the scripted `engine`."""

    app: DesktopApp
    sessions: ScriptedSessions

    @property
    def window(self):  # type: ignore[no-untyped-def]
        return self.app.window

    @property
    def engine(self) -> InProcessEngine:
        return self.sessions.engine

    @property
    def session(self) -> WatchedSession:
        """The session the window was handed last (a reopen hands it another)."""
        return self.sessions.session

    @property
    def sent(self) -> list[str]:
        """The user's message of each turn that reached the engine."""
        return self.sessions.asked()


def _wait_until_made(qtbot: Any, sessions: ScriptedSessions) -> None:
    qtbot.waitUntil(lambda: bool(sessions.sessions), timeout=5000)


@pytest.fixture
def open_desktop(qtbot: Any, tmp_path: Path) -> Iterator[Callable[..., OpenDesktop]]:
    """Open the window on a real session over an in-process engine: `engine` (by default
    an 8K one), `history` a conversation saved before, `workspace` the folder it works in,
    `prepare(sessions)` what runs before the window opens, any other keyword a change to
    the agent (`name`, `model`, ...)."""
    apps: list[DesktopApp] = []

    def _open(
        *,
        wait_open: bool = True,
        engine: InProcessEngine | None = None,
        history: list[Any] | None = None,
        workspace: Path | None = None,
        prepare: Callable[[ScriptedSessions], Any] | None = None,
        **agent: Any,
    ) -> OpenDesktop:
        sessions = ScriptedSessions.on(
            tmp_path, engine, history=history, workspace=workspace, **agent
        )
        if prepare is not None:
            prepare(sessions)
        app = DesktopApp(sessions.factory)
        apps.append(app)
        qtbot.addWidget(app.window)
        app.window.show()
        if wait_open:
            with qtbot.waitSignal(app.bridge.opened, timeout=5000):
                pass
        else:
            _wait_until_made(qtbot, sessions)
        return OpenDesktop(app, sessions)

    yield _open
    for app in apps:
        app.shutdown()


@dataclass
class RealDesktop:
    app: DesktopApp
    paths: BrimPaths

    @property
    def window(self):  # type: ignore[no-untyped-def]
        return self.app.window


def chat_and_wait(qtbot: Any, d: Any, text: str) -> None:
    """Type `text` into a desktop's composer, send it with Enter, wait for the turn to end."""
    from PySide6.QtCore import Qt

    d.window.composer.setPlainText(text)
    qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)


def agent_toml(name: str, url: str, provider: str = "llamacpp", **extra: Any) -> str:
    lines = [
        f'name = "{name}"',
        f'provider = "{provider}"',
        f'base_url = "{url}"',
        'model = "fake"',
    ]
    lines.extend(
        f"{key} = {value!r}" if isinstance(value, str) else f"{key} = {value}"
        for key, value in extra.items()
    )
    return "\n".join(lines) + "\n"


@pytest.fixture
def real_desktop(qtbot: Any, tmp_path: Path) -> Iterator[Callable[..., RealDesktop]]:
    """The whole app on a data folder: real agents, real store, real ChatSessions (pointed
    at fake engines by their agent files)."""
    apps: list[DesktopApp] = []

    def _open(
        *,
        agents: dict[str, str] | None = None,
        home: Path | None = None,
        workspace: Path | None = None,
        wait_open: bool = True,
        reflect_on_close: bool = False,
    ) -> RealDesktop:
        paths = BrimPaths.under(home or tmp_path / "home")
        if agents:
            paths.agents_dir.mkdir(parents=True, exist_ok=True)
            for file_name, text in agents.items():
                (paths.agents_dir / file_name).write_text(text, encoding="utf-8")
        app = DesktopApp(paths=paths, workspace=workspace, reflect_on_close=reflect_on_close)
        apps.append(app)
        qtbot.addWidget(app.window)
        app.window.show()
        if wait_open:
            with qtbot.waitSignal(app.bridge.opened, timeout=10000):
                pass
        return RealDesktop(app, paths)

    yield _open
    for app in apps:
        if app.navigator is not None:
            app.navigator.save_window()
        app.shutdown()


@dataclass
class MemoryDesktop(OpenDesktop):
    """The window on real sessions with memory on a real root (`service`)."""

    service: MemoryService

    @property
    def desk(self):  # type: ignore[no-untyped-def]
        return self.app.memory


@pytest.fixture
def memory_desktop(qtbot: Any, tmp_path: Path) -> Iterator[Callable[..., MemoryDesktop]]:
    """The window on a real session (as `open_desktop`) with memory on a real root under
    tmp_path (the queue, the files and the watcher are real; `prepare(service)` runs before
    the window opens)."""
    apps: list[DesktopApp] = []

    def _open(
        *,
        prepare: Callable[[MemoryService], Any] | None = None,
        engine: InProcessEngine | None = None,
        history: list[Any] | None = None,
        **agent: Any,
    ) -> MemoryDesktop:
        service = MemoryService(tmp_path / "memory")
        if prepare is not None:
            prepare(service)
        sessions = ScriptedSessions.on(tmp_path, engine, history=history, **agent)
        app = DesktopApp(sessions.factory, memory_root=service.root)
        apps.append(app)
        qtbot.addWidget(app.window)
        app.window.show()
        with qtbot.waitSignal(app.bridge.opened, timeout=5000):
            pass
        assert app.memory is not None
        qtbot.waitUntil(lambda: app.memory.reads > 0, timeout=5000)
        return MemoryDesktop(app, sessions, service)

    yield _open
    for app in apps:
        app.shutdown()
