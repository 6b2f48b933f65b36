"""The Thinking block on a real X display, the model reasoning on the real llama-server.

    python -m tests.desktop.make_real_thinking_shot [OUT_DIR]

Starts the real llama-server the tests install, made to reason with the bundled SmolLM2 (a
grammar forcing a `<think>` block before every answer, a template that renders earlier
reasoning, `--reasoning-format deepseek`: tests/integration/data), and its own Xvfb when
DISPLAY is unset; runs the window through Qt's xcb platform on an agent that talks to that
server, asks two questions, and captures the window from the X server. Writes (default
folder docs/screenshots):

- thinking-real-folded.png: both answers, each Thinking block folded to how long the model
  thought and how many tokens;
- thinking-real-open.png: the first block unfolded, the reasoning the server streamed apart
  from the answer.

Nothing is scripted but the user's lines: what the 135M model reasons is its own.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench._llama_server import running_llama_server
from tests.desktop.make_model_saw_shots import capture, start_display
from tests.helpers.reasoning_server import reasoning_server_args

DEFAULT_OUT = Path("docs/screenshots")
SIZE = (1280, 800)
QUESTIONS = ("Why is the sky blue?", "And why is the sunset red?")
FOLDED = "thinking-real-folded.png"
OPEN = "thinking-real-open.png"


def shots(root: Path, out: Path) -> list[Path]:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from desktop.app import ensure_application
    from engine.paths import BrimPaths
    from tests.desktop.make_screenshots import close, pump_for, pump_until, start

    ensure_application()
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    with running_llama_server(
        root, ctx=2048, parallel=1, extra_args=reasoning_server_args()
    ) as server:
        (paths.agents_dir / "default.toml").write_text(
            f'name = "thinker"\nprovider = "llamacpp"\nbase_url = "{server.url}"\n'
            'model = ""\nmax_tokens = 96\n',
            encoding="utf-8",
        )
        app = start(paths, root)
        try:
            window = app.window
            window.resize(*SIZE)
            for text in QUESTIONS:
                window.composer.setPlainText(text)
                QTest.keyClick(window.composer, Qt.Key.Key_Return)
                pump_until(lambda: not app.bridge.busy, timeout=180)
            pump_for(0.5)
            taken = [capture(window, out / FOLDED)]
            transcript = window.transcript
            first = next(r for r in transcript._rows if r.kind == "thinking")
            transcript.toggle(first.id)
            pump_for(0.5)
            taken.append(capture(window, out / OPEN))
            return taken
        finally:
            close(app)


def make_real_thinking_shots(out: Path = DEFAULT_OUT) -> list[Path]:
    display = start_display()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="brim-thinking-") as tmp:
            return shots(Path(tmp), out)
    finally:
        if display is not None:
            display.terminate()
            display.wait(timeout=10)


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for shot in make_real_thinking_shots(folder):
        print(shot)
