"""A thinking model in the window: one answer's Thinking block folded above it, the next one
still thinking.

    QT_QPA_PLATFORM=offscreen python -m tests.desktop.make_thinking_shot [OUT_DIR]

Writes thinking-block.png (default folder docs/screenshots): the real app on a temporary data
folder, its session on the in-process engine made to think (tests/helpers/thinking_engine.py):
the reasoning streams apart from the answer, as the providers hand it on.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from desktop.app import DesktopApp, ensure_application
from desktop.screenshot import grab_window
from tests.desktop.make_screenshots import close, pump_for, pump_until, send
from tests.helpers.scripted_session import ScriptedSessions
from tests.helpers.thinking_engine import ThinkingEngine

DEFAULT_OUT = Path("docs/screenshots")

FIRST = "We have 3 days in Porto in May. Which day should we keep for the Douro valley?"
THOUGHT = (
    "The user has three days in Porto in May and wants to fit in the Douro valley. "
    "A Douro trip takes a whole day: trains from São Bento leave early and come back in the "
    "evening. Day one is usually spent arriving and walking the Ribeira. The last day has "
    "the flight home. So the middle day is the natural choice. May weather is mild; a river "
    "cruise is possible but the train along the river is cheaper and just as scenic.\n"
    "I should suggest day two, the early train, and booking the quinta visit ahead."
)
ANSWER = (
    "Keep **day two** for the Douro valley.\n\n"
    "- Take the early train from **São Bento** to Pinhão (about 2½ hours along the river).\n"
    "- Book a quinta visit with tasting ahead; May is busy.\n"
    "- Be back in Porto for dinner: day three stays free for the Ribeira and your flight."
)
SECOND = "And where should we eat on the first evening?"
SECOND_THOUGHT = (
    "First evening, they arrive tired, so somewhere close to the Ribeira or Miragaia. "
    "They liked walking. A francesinha is the local dish, but heavy; grilled sardines by "
    "the river in May is lighter. I should name the area rather than one restaurant."
)


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def thinking_shot(root: Path, out: Path) -> Path:
    engine = ThinkingEngine(window=8192)
    engine.think(_pieces(THOUGHT), delay_s=0.04)
    engine.script(ANSWER, delay_s=0.01)
    engine.think(_pieces(SECOND_THOUGHT), delay_s=0.04)
    engine.script("", hold=True)  # still thinking when the shot is taken
    sessions = ScriptedSessions.on(root, engine, name="travel", model="qwen3-8b")
    app = DesktopApp(sessions.factory)
    app.window.resize(1280, 800)
    app.window.show()
    try:
        pump_until(lambda: app.window.header.state() == "ready")
        send(app, FIRST)
        send(app, SECOND, wait=False)
        pump_until(lambda: "sardines" in app.window.transcript.toPlainText())
        pump_for(0.3)
        shot = grab_window(app.window, out / "thinking-block.png")
        app.bridge.cancel()
        pump_until(lambda: not app.bridge.busy)
    finally:
        close(app)
    return shot


def make_thinking_shot(out: Path = DEFAULT_OUT) -> Path:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brim-thinking-shot-") as tmp:
        return thinking_shot(Path(tmp), out)


if __name__ == "__main__":
    print(make_thinking_shot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
