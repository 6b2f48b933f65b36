"""What the model saw, on a real X display: the cut line after a compaction, and the view.

    python -m tests.desktop.make_model_saw_shots [--fake] [OUT_DIR]

Starts its own Xvfb (1920x1080x24) when DISPLAY is unset, runs the window on it through
Qt's xcb platform (never offscreen) and captures it from the X server with ImageMagick's
`import -window`. Writes (default folder docs/screenshots):

- model-saw-cut-line.png: the transcript after an automatic compaction, the rows the
  model's last request no longer carries dimmed above "the model's last request starts here";
- model-saw-view.png: the rail's "What the model saw" opened on that request: each part's
  tokens, what changed since the request before, and the request as the engine rendered it.

By default the default agent runs the bundled model through the embedded engine with
`num_ctx = 1024` and answers capped at 96 tokens; nothing is scripted but the user's lines.
`--fake` points the agent at a fake llama-server on a 4,096-token window instead, with
scripted answers and summary (seconds rather than minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.desktop.make_small_model_screenshot import FACTS
from tests.desktop.make_small_model_screenshot import TRIP as ALL_TRIP

DEFAULT_OUT = Path("docs/screenshots")
SCREEN = "1920x1080x24"
SIZE = (1280, 800)
CUT_SHOT = "model-saw-cut-line.png"
VIEW_SHOT = "model-saw-view.png"

# The same trip conversation as the small-model screenshot, its first twelve questions.
TRIP = ALL_TRIP[:12]

FAKE_ANSWER = (
    "Alfama suits you: steep lanes, the castle above it and short walks to the river. "
    "Stay near Largo do Chafariz de Dentro so the trams and the metro are close, and keep "
    "the evenings for the viewpoints at Portas do Sol and Graça."
)
FAKE_SUMMARY = """## Goal
Plan a four-day trip to Lisbon in May with my sister.
## Constraints & Preferences
- Budget 1200 euros for the whole trip.
- Allergic to peanuts.
## Covered So Far
- Where to stay, the airport, a day trip.
## Progress
### Done
- Suggested Alfama and how to reach it.
### In Progress
- (none)
### Blocked
- (none)
## Key Decisions
- Stay in Alfama.
## Next Steps
- Answer the next question.
## Critical Context
- (none)
"""


def start_display() -> subprocess.Popen[bytes] | None:
    """An Xvfb of our own when no X display is set; Qt then draws through xcb."""
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    if os.environ.get("DISPLAY"):
        return None
    for number in range(91, 120):
        if not Path(f"/tmp/.X11-unix/X{number}").exists():
            break
    server = subprocess.Popen(
        ["Xvfb", f":{number}", "-screen", "0", SCREEN, "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not Path(f"/tmp/.X11-unix/X{number}").exists():
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError(f"Xvfb :{number} did not start")
        time.sleep(0.1)
    os.environ["DISPLAY"] = f":{number}"
    return server


def capture(window: Any, path: Path) -> Path:
    """What the X server shows of the window, as a 256-colour PNG (a tenth of the bytes)."""
    from tests.desktop.make_screenshots import pump_for

    window.raise_()
    pump_for(0.6)
    if shutil.which("import") is None:
        raise RuntimeError("ImageMagick's `import` is needed: apt-get install imagemagick")
    full = path.with_suffix(".full.png")
    subprocess.run(["import", "-window", str(int(window.winId())), str(full)], check=True)
    # 256 colours without dithering: the window's flat colours stay as they are.
    subprocess.run(["convert", str(full), "-dither", "None", "-colors", "256", f"PNG8:{path}"])
    full.unlink()
    return path


def show_cut_line(transcript: Any) -> None:
    """Scroll so the cut line sits a third of the way down, dimmed rows above it."""
    from desktop.widgets.transcript_rows import CUT_LABEL

    found = transcript.document().find(CUT_LABEL)
    if found.isNull():
        raise RuntimeError("the transcript shows no cut line")
    layout = transcript.document().documentLayout()
    top = layout.blockBoundingRect(found.block()).top()
    transcript.follower.stop_following()
    transcript.verticalScrollBar().setValue(max(0, int(top - transcript.viewport().height() / 3)))


def _fake_agent(url: str) -> str:
    return (
        f'name = "default"\nprovider = "llamacpp"\nbase_url = "{url}"\n'
        'model = "SmolLM2-360M-Instruct-Q8_0"\nsystem_prompt = "You help plan trips."\n'
    )


def _embedded_agent() -> str:
    return 'name = "default"\nprovider = "embedded"\nmodel = ""\nnum_ctx = 1024\nmax_tokens = 96\n'


def _conversation(app: Any, turn_limit: float) -> None:
    """The user's lines until the window compacts (the turn that compacted is the last)."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from engine.events import CompactionEvent
    from tests.desktop.make_screenshots import pump_until

    compactions = 0

    def count(event: object) -> None:
        nonlocal compactions
        if isinstance(event, CompactionEvent) and event.phase == "finished":
            compactions += 1

    def send(text: str) -> None:
        app.window.composer.setPlainText(text)
        QTest.keyClick(app.window.composer, Qt.Key.Key_Return)
        pump_until(lambda: not app.bridge.busy, timeout=turn_limit)
        print(f"sent: {text} (compactions: {compactions})", flush=True)

    app.bridge.event.connect(count)
    for text in FACTS + TRIP:
        send(text)
        if compactions:
            break
    if not compactions:
        raise RuntimeError(f"the conversation never compacted: {app.window.rail.report()}")


def shots(root: Path, out: Path, *, fake: bool) -> list[Path]:
    from desktop.app import ensure_application
    from engine.paths import BrimPaths
    from tests.desktop.make_screenshots import close, pump_for, pump_until, start
    from tests.engine.memory.fakes import role_of
    from tests.helpers.compaction_requests import is_compaction
    from tests.helpers.fake_engines import FakeLlamaServer, Reply

    ensure_application()
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    agent = paths.agents_dir / "default.toml"
    server = FakeLlamaServer(n_ctx=4096, slots=1) if fake else None
    if server is not None:
        server.__enter__()

        def respond(request: Any) -> Reply:
            if is_compaction(request.body):
                return Reply(text=FAKE_SUMMARY)
            if role_of(request.body) == "extractor":
                return Reply(text='{"memories": [], "lessons": []}')
            return Reply(text=FAKE_ANSWER + " " + FAKE_ANSWER)

        server.responder = respond
        agent.write_text(_fake_agent(server.url), encoding="utf-8")
    else:
        agent.write_text(_embedded_agent(), encoding="utf-8")
    app = start(paths, root)
    try:
        window = app.window
        window.resize(*SIZE)
        _conversation(app, turn_limit=60.0 if fake else 300.0)
        show_cut_line(window.transcript)
        pump_for(0.3)
        taken = [capture(window, out / CUT_SHOT)]
        window.rail.saw_button.click()
        pump_until(lambda: window.overlay.kind == "request", timeout=30)
        taken.append(capture(window, out / VIEW_SHOT))
        return taken
    finally:
        close(app)
        if server is not None:
            server.__exit__(None, None, None)


def make_model_saw_shots(out: Path = DEFAULT_OUT, *, fake: bool = False) -> list[Path]:
    display = start_display()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="brim-model-saw-") as tmp:
            return shots(Path(tmp), out, fake=fake)
    finally:
        if display is not None:
            display.terminate()
            display.wait(timeout=10)


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--fake"]
    folder = Path(arguments[0]) if arguments else DEFAULT_OUT
    for shot in make_model_saw_shots(folder, fake="--fake" in sys.argv[1:]):
        print(shot)
